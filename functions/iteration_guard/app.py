"""IterationGuard state: count the iteration and set the final round at the limit or deadline."""

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from stepwise.steps import iteration_guard as step
from stepwise.steps.runtime import runtime_from_environment
from stepwise.telemetry.observability import logger, metrics

runtime = runtime_from_environment(os.environ, reads_configuration=False)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return step.handle(event, runtime.get())
