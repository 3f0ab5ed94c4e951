"""Calls of the API function from a protocol app, in process, as the client that called the protocol."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stepwise.streaming.answers import Event, proxy_response
from stepwise.streaming.proxy_event import proxy_event

# Where a mounted app finds its `ApiCaller` in the ASGI scope (Starlette shows `scope["state"]` as
# `request.state`).
API_CALLER_STATE = "stepwise_api"


@dataclass(frozen=True)
class ApiAnswer:
    """The API's answer: its status, headers and JSON body (None when the body is not JSON)."""

    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """True for a 2xx answer."""
        return 200 <= self.status < 300


@dataclass(frozen=True)
class ApiCaller:
    """The API function, called with proxy events that carry the protocol request's own identity.

    `request_context` is the one API Gateway (or `stepwise serve`) made for the protocol request: the
    API sees the same caller, so a protocol client owns the runs it starts and reads only its own.
    """

    invoke: Callable[[Event], Any]
    request_context: dict[str, Any]
    host: str = ""

    def request(
        self, method: str, target: str, body: Any = None, *, headers: Sequence[tuple[str, str]] = ()
    ) -> ApiAnswer:
        """Call `method target` (a path with its query) with a JSON `body`, and read the answer."""
        raw = b"" if body is None else json.dumps(body).encode("utf-8")
        pairs = [("content-type", "application/json"), *headers]
        if self.host:
            pairs.append(("host", self.host))
        event = proxy_event(method=method, target=target, headers=pairs, body=raw, request_context=self.request_context)
        answer = proxy_response(self.invoke(event))
        if not isinstance(answer.body, bytes):
            raise TypeError(f"{method} {target} answered with a stream where JSON was expected")
        try:
            document = json.loads(answer.body) if answer.body else None
        except ValueError:
            document = None
        return ApiAnswer(answer.status, document, tuple(answer.headers))


def api_caller_of(scope: dict[str, Any]) -> ApiCaller:
    """The `ApiCaller` the front put in a mounted app's scope."""
    caller = (scope.get("state") or {}).get(API_CALLER_STATE)
    if not isinstance(caller, ApiCaller):
        raise RuntimeError("no API caller in the request's scope: the app must be served through a protocol mount")
    return caller
