"""Compact state: summarize the run's earlier iterations so its next model request fits the window."""

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from stepwise.steps import compaction as step
from stepwise.steps.runtime import runtime_from_environment
from stepwise.telemetry.observability import logger, metrics

runtime = runtime_from_environment(os.environ, reads_configuration=True)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return step.handle(event, runtime.get())
