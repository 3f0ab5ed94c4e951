"""`stepwise serve`'s streamed route: `GET /v1/runs/{run_id}/events` asked as `text/event-stream`.

API Gateway (REST) buffers a Lambda's answer, so on AWS the route answers JSON; locally the server's
streaming hook sends each step as it is stored, from the same store the API reads.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.local.http_front import HttpResponse, StreamRoute, error_answer
from stepwise.steps.api.errors import ApiError
from stepwise.steps.api.events import event_stream, follow_run
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.runtime import StepRuntime

EVENTS_RESOURCE = "/v1/runs/{run_id}/events"
EVENT_STREAM = "text/event-stream"


def _header(event: dict[str, Any], name: str) -> str:
    headers = event.get("headers") or {}
    return next((str(value) for key, value in headers.items() if key.lower() == name), "")


def events_stream_route(runtime: StepRuntime) -> StreamRoute:
    """The stream route serving run events as server-sent events from `runtime`'s store."""

    def route(event: dict[str, Any]) -> HttpResponse | None:
        if event.get("httpMethod") != "GET" or event.get("resource") != EVENTS_RESOURCE:
            return None
        if EVENT_STREAM not in _header(event, "accept"):
            return None
        try:
            owner = request_owner(APIGatewayProxyEvent(event))
            reads = follow_run(
                runtime,
                owner=owner,
                run_reference=(event.get("pathParameters") or {}).get("run_id", ""),
                after=(event.get("queryStringParameters") or {}).get("after") or None,
            )
        except ApiError as error:
            return error_answer(error.status, error.type, error.message)
        return HttpResponse(200, [("content-type", EVENT_STREAM), ("cache-control", "no-cache")], event_stream(reads))

    return route
