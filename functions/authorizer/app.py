"""The API's request authorizer: the caller's key from `x-api-key` or `Authorization: Bearer`, for the usage plan."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from stepwise.steps.api.caller_key import authorize


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(event)
