"""The API's OpenAPI document: its title, the responses each route lists, and the schemas of the streamed
answers, which no pydantic model describes (one server-sent event each)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, content_types
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from stepwise.models.api_responses import ErrorResponse

API_TITLE = "Stepwise"
API_VERSION = "1.0.0"
API_DESCRIPTION = (
    "A ReAct agent service: start a run, poll it by id, or wait for its answer through the "
    "OpenAI-compatible chat completions facade."
)

_ERROR_DESCRIPTIONS = {
    400: "The body is not JSON; or the caller's key (x-api-key or Authorization) is over 512 characters or "
    "holds characters no key has (details.errors names the header).",
    401: "No caller identity.",
    404: "No such run visible to the caller.",
    409: "Idempotency-Key reused with another body, or still in progress; or the run already ended; or the "
    "tool call is not waiting for approval; or an approval's arguments_sha256 names other arguments than the "
    "waiting call's (approval_stale); or the run is not waiting at its budget.",
    413: "The body is over the configured limit.",
    415: "The body was not sent as application/json.",
    422: "The request does not validate; details.errors names each field.",
    429: "The run ended without an answer because its model provider answered 429 (rate limited) until it gave "
    "up; Retry-After is the provider's, when it sent one.",
    502: "The run ended FAILED, TIMED_OUT or CANCELLED without an answer; the message names the error that ended "
    "it (details.error).",
    503: "Step Functions or DynamoDB could not take the request; retry.",
    504: "The run did not finish in time; details.run_id can be polled.",
}


def success_response(status: int, description: str, model: type[BaseModel]) -> dict[int, OpenAPIResponse]:
    """One success response of a route, with its body model."""
    # Powertools documents the return type only for routes without `responses`; these routes list theirs.
    return {status: {"description": description, "content": {content_types.APPLICATION_JSON: {"model": model}}}}


def error_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """The error responses a route can answer, each with the one error body."""
    return {
        status: {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {content_types.APPLICATION_JSON: {"model": ErrorResponse}},
        }
        for status in statuses
    }


# The media type of server-sent events, which the streamed routes answer with.
EVENT_STREAM = "text/event-stream"

# One server-sent event of a streamed completion, as an OpenAPI 3.1 `text/event-stream` schema describes it
# (each event, not the stream as a whole).
CHUNK_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {"type": "string", "description": "A `chat.completion.chunk` as JSON; the last event is `[DONE]`."}
    },
}

STEP_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "enum": ["step", "end"]},
        "id": {"type": "string", "description": "The cursor after this step (on the last step of a read)."},
        "data": {"type": "string", "description": "The step as JSON; for `end`, the run id and final status."},
    },
}


def openapi_document(app: APIGatewayRestResolver) -> dict[str, Any]:
    """The OpenAPI document of the routes registered on `app`."""
    # Powertools' OpenAPI models (a hundred pydantic models) are built only for the document, which few
    # requests ask for; importing them at module level cost every cold start of the API tens of ms
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, HTTPBearer

    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title=API_TITLE,
            version=API_VERSION,
            description=API_DESCRIPTION,
            security_schemes={
                "api_key": APIKey.model_validate({"in": APIKeyIn.header, "name": "x-api-key"}),
                "bearer": HTTPBearer(description="The same API key, as OpenAI clients send it."),
            },
            security=[{"api_key": []}, {"bearer": []}],
        )
    )
    return document
