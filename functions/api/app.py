"""The HTTP API: start runs, read them back, and the OpenAI-compatible chat completions facade."""

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from stepwise.steps import api
from stepwise.telemetry.observability import logger, metrics

services = api.services_from_environment(os.environ)
app = api.RequestScopedResolver(
    traced_by=services, enable_validation=True, json_body_deserializer=api.json_body_reader(services)
)
api.register_routes(app, services)


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
