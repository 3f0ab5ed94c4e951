"""The span of each API request: the root of the trace of the run a request starts.

The span is opened around the whole resolution of a request (`RequestScopedResolver.resolve`), not in a
route middleware: Powertools validates a request before any middleware of ours runs, so a request it
answers 422 (or that no route takes) would have no span. The status recorded is the one the client gets:
a chat request a streaming front marked (`stream_mark`) is answered 202 here and then streamed to its
client with 200 by the front (`stepwise.streaming.routes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from stepwise.steps.api.route_table import ROUTES
from stepwise.steps.api.services import LazyServices
from stepwise.steps.api.stream_mark import is_marked

# what a marked request's 202 (the run started) becomes at the front that streams it
STREAMED_STATUS = 200
# `http.route` is a route template; a path no route takes (its own `resource` locally) names none
_ROUTE_TEMPLATES = frozenset(path for _, path in ROUTES)


def traced_answer(
    services: LazyServices, event: Mapping[str, Any], resolve: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """`resolve()`'s answer to `event`, inside the request's SERVER span (the console's files are not traced).
    A refused request's span has its 4xx; anything that escapes is a 500."""
    path = str(event.get("path") or "/")
    resource = str(event.get("resource") or "")
    if (resource or path).startswith("/ui"):
        return resolve()
    route = resource if resource in _ROUTE_TEMPLATES else None
    context = event.get("requestContext") or {}
    identity = context.get("identity") or {}
    with services.get().runtime.spans.request(
        method=str(event.get("httpMethod") or ""),
        route=route,
        path=path,
        headers={str(name): str(value) for name, value in (event.get("headers") or {}).items()},
        query=_query(event),
        client_address=identity.get("sourceIp"),
        protocol=context.get("protocol"),
    ) as span:
        try:
            answer = resolve()
        except Exception:
            span.responded(500)
            raise
        status = int(answer.get("statusCode") or 200)
        span.responded(STREAMED_STATUS if status == 202 and is_marked(event) else status)
        return answer


def _query(event: Mapping[str, Any]) -> str:
    """The request's query string as the client sent it, from the proxy event's parameters."""
    multi = event.get("multiValueQueryStringParameters") or {}
    if multi:
        return urlencode([(name, value) for name, values in multi.items() for value in values or []])
    return urlencode(event.get("queryStringParameters") or {})
