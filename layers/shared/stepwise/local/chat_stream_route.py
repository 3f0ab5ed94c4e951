"""`stepwise serve`'s streamed chat: `POST /v1/chat/completions` with `stream: true`, sent as the run goes.

The API function still checks the request (auth, body limits, validation) and starts the run: the
request reaches it marked (`STREAM_MARK`), so it answers 202 with the run instead of waiting. Any
other answer (an error, or a buffered stream of an Express run) is passed on as it is.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.local.http_front import HttpResponse, StreamRoute, proxy_response
from stepwise.steps.api.chat_stream import STREAM_MARK, ChatStreamStart, chat_chunks
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.runtime import StepRuntime

CHAT_RESOURCE = "/v1/chat/completions"
EVENT_STREAM = "text/event-stream"


def _asks_to_stream(event: dict[str, Any]) -> bool:
    raw = event.get("body") or ""
    try:
        text = base64.b64decode(raw).decode("utf-8") if event.get("isBase64Encoded") else raw
        body = json.loads(text)
    except (ValueError, UnicodeError):
        return False  # the API function answers a body it cannot read
    return isinstance(body, dict) and body.get("stream") is True


def chat_stream_route(runtime: StepRuntime, invoke: Callable[[dict[str, Any]], Any]) -> StreamRoute:
    """The stream route sending streamed chat completions as the run goes; `invoke` calls the API function."""

    def route(event: dict[str, Any]) -> HttpResponse | None:
        if event.get("httpMethod") != "POST" or event.get("resource") != CHAT_RESOURCE or not _asks_to_stream(event):
            return None
        marked = {**event, "requestContext": {**(event.get("requestContext") or {}), STREAM_MARK: True}}
        answer = invoke(marked)
        if not isinstance(answer, dict) or answer.get("statusCode") != 202:
            return proxy_response(answer)
        start = ChatStreamStart.model_validate_json(answer.get("body") or "")
        owner = request_owner(APIGatewayProxyEvent(event))
        body = chat_chunks(runtime, owner=owner, start=start)
        return HttpResponse(200, [("content-type", EVENT_STREAM), ("cache-control", "no-cache")], body)

    return route
