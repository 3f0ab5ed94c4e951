"""The API's Powertools resolver, with the request it is resolving kept to that request.

Powertools stores the current event and Lambda context on its `BaseRouter` class, so every resolver
in a process shares them. On Lambda a process serves one request at a time, but `stepwise serve` runs
concurrent requests in one process (a resolver each), where a request would read another request's
event, and so act for another caller. Here both are kept per thread, which is per request.

Every answer it gives has the known secrets redacted from its JSON body (`redacted_answers`). Given the
services (`traced_by`), each request is resolved inside its span (`request_spans`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from stepwise.steps.api.redacted_answers import redacted_answer
from stepwise.steps.api.request_spans import traced_answer
from stepwise.steps.api.services import LazyServices


class RequestScopedResolver(APIGatewayRestResolver):
    """An `APIGatewayRestResolver` whose `current_event` and `lambda_context` are those of its own request."""

    def __init__(self, *, traced_by: LazyServices | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._request = threading.local()
        self._traced_by = traced_by

    @property  # type: ignore[override]
    def current_event(self) -> APIGatewayProxyEvent:
        """The event of the request being resolved on this thread."""
        event: APIGatewayProxyEvent = self._request.event
        return event

    @current_event.setter
    def current_event(self, event: APIGatewayProxyEvent) -> None:
        self._request.event = event

    @property
    def lambda_context(self) -> LambdaContext:
        """The Lambda context of the request being resolved on this thread."""
        context: LambdaContext = self._request.context
        return context

    @lambda_context.setter
    def lambda_context(self, context: LambdaContext) -> None:
        self._request.context = context

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Resolve `event` with it as this request's current event (its media type in lower case); the
        answer's JSON body holds no known secret."""
        event = with_lower_case_media_type(event)
        self.current_event = APIGatewayProxyEvent(dict(event), self._json_body_deserializer)
        self.lambda_context = context
        resolved = event

        def resolve() -> dict[str, Any]:
            return redacted_answer(super(RequestScopedResolver, self).resolve(resolved, context))

        return resolve() if self._traced_by is None else traced_answer(self._traced_by, resolved, resolve)


def with_lower_case_media_type(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """`event` with its Content-Type's media type in lower case, its parameters kept.

    Media types are case-insensitive (RFC 9110, 8.3.1), but Powertools' request validation compares the
    header with `application/json` as written, and answered `APPLICATION/JSON` with an unexpected error.
    """
    headers = event.get("headers") or {}
    multi = event.get("multiValueHeaders") or {}
    if not any(str(name).lower() == "content-type" for name in (*headers, *multi)):
        return event

    def lowered(name: str, value: Any) -> Any:
        if str(name).lower() != "content-type" or not isinstance(value, str):
            return value
        media_type, separator, parameters = value.partition(";")
        return media_type.strip().lower() + separator + parameters

    return {
        **event,
        "headers": {name: lowered(name, value) for name, value in headers.items()},
        "multiValueHeaders": {name: [lowered(name, value) for value in values] for name, values in multi.items()},
    }
