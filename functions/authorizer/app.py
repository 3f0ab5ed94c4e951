"""The API's request authorizer: the caller's key from `x-api-key` or `Authorization: Bearer`, for the usage plan."""

from typing import TYPE_CHECKING, Any

from stepwise.steps.api.caller_key import authorize

if TYPE_CHECKING:
    # for the signature only: importing Powertools would add to every cold start of this small function
    from aws_lambda_powertools.utilities.typing import LambdaContext


def lambda_handler(event: dict[str, Any], context: "LambdaContext") -> dict[str, Any]:
    return authorize(event)
