"""The streaming function's ASGI app: the two streamed routes on AWS, behind the AWS Lambda Web Adapter.

API Gateway invokes the function with `InvokeWithResponseStream` (the methods' `responseTransferMode` is
`STREAM`); the Web Adapter turns each proxy event back into an HTTP request to this app on 127.0.0.1 and
writes our answer to Lambda's response stream as it is produced. The app rebuilds the proxy event (the
same shape `stepwise serve` builds) and hands it to the same stream routes as `stepwise serve`, or, for
what they pass on (JSON polls, unstreamed chat), to the API function's own resolver, in process.

Who is calling comes only from the request context API Gateway filled in (the API key's id, or the IAM
caller), which the adapter forwards in `x-amzn-request-context` and overwrites when a client sends a
header of that name. Without it the request has no identity, and the API answers 401.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from stepwise.interop.api_calls import ApiCaller
from stepwise.interop.mounts import ProtocolApp, mounted_app, serve_mounted
from stepwise.interop.registry import protocol_apps
from stepwise.steps import api
from stepwise.streaming.answers import (
    Event,
    HttpResponse,
    StreamRoute,
    error_answer,
    next_chunk,
    proxy_response,
    send_answer,
)
from stepwise.streaming.proxy_event import proxy_event
from stepwise.streaming.routes import chat_stream_route, events_stream_route
from stepwise.telemetry.observability import logger, metrics

REQUEST_CONTEXT_HEADER = "x-amzn-request-context"
LAMBDA_CONTEXT_HEADER = "x-amzn-lambda-context"
_FORWARDED = {REQUEST_CONTEXT_HEADER, LAMBDA_CONTEXT_HEADER}

ApiHandler = Callable[[Event, Any], Any]
RoutesFor = Callable[[Callable[[Event], Any]], Sequence[StreamRoute]]


@dataclass(frozen=True)
class ForwardedLambdaContext:
    """The parts of the Lambda context the adapter forwards in `x-amzn-lambda-context` that the API reads."""

    aws_request_id: str = ""
    deadline_ms: int = 0
    invoked_function_arn: str = ""
    function_name: str = "StreamFunction"
    memory_limit_in_mb: int = 0

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the invocation's deadline (0 when the deadline is unknown)."""
        return max(0, self.deadline_ms - int(time.time() * 1000)) if self.deadline_ms else 0

    @classmethod
    def from_header(cls, value: str | None) -> ForwardedLambdaContext:
        """The context in the header's JSON (`request_id`, `deadline`, `invoked_function_arn`); empty without."""
        try:
            document = json.loads(value) if value else {}
        except ValueError:
            document = {}
        if not isinstance(document, dict):
            return cls()
        return cls(
            aws_request_id=str(document.get("request_id") or ""),
            deadline_ms=int(document.get("deadline") or 0),
            invoked_function_arn=str(document.get("invoked_function_arn") or ""),
        )


def forwarded_request_context(value: str | None) -> dict[str, Any]:
    """API Gateway's request context from the adapter's header; empty (no identity) when absent or not an object."""
    try:
        document = json.loads(value) if value else None
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


class StreamingApp:
    """ASGI app: each request becomes a proxy event, answered by a stream route or the API's resolver.

    `routes_for` is given the request's way to call the API function and returns the stream routes to try;
    handlers are synchronous, so they and the chunks of a streamed body run on a small pool (the function
    serves one request at a time; a second thread serves the chunk a route's generator produces).
    """

    def __init__(
        self,
        handler: ApiHandler,
        routes_for: RoutesFor,
        *,
        workers: int = 4,
        protocol_apps: Sequence[ProtocolApp] = (),
        max_body_bytes: int = 262_144,
    ) -> None:
        self._handler = handler
        self._routes_for = routes_for
        self._protocol_apps = list(protocol_apps)
        self._max_body_bytes = max_body_bytes
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="stream-worker")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application."""
        if scope["type"] != "http":
            return
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        forwarded = {name.lower(): value for name, value in headers if name.lower() in _FORWARDED}
        mounted = mounted_app(self._protocol_apps, scope["path"])
        if mounted is not None:
            await self._serve_protocol(mounted, scope, receive, send, forwarded)
            return
        body = await _read_body(receive)
        target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        event = proxy_event(
            method=scope["method"],
            target=target,
            headers=[(name, value) for name, value in headers if name.lower() not in _FORWARDED],
            body=body,
            request_context=forwarded_request_context(forwarded.get(REQUEST_CONTEXT_HEADER)),
        )
        context = ForwardedLambdaContext.from_header(forwarded.get(LAMBDA_CONTEXT_HEADER))
        loop = asyncio.get_running_loop()
        try:
            answer = await loop.run_in_executor(self._pool, self._dispatch, event, context)
        except Exception:  # what API Gateway answers when the function itself fails
            logger.exception("the streaming function failed", extra={"path": event["path"]})
            answer = error_answer(502, "bad_gateway", "Internal server error")
        # the adapter's connection closing ends a stream: its body stops reading the store at once
        await send_answer(send, scope["method"], answer, self._next_chunk, receive=receive)

    async def _serve_protocol(
        self, mounted: ProtocolApp, scope: dict[str, Any], receive: Any, send: Any, forwarded: dict[str, str]
    ) -> None:
        """A protocol's request (A2A, MCP): its app answers, calling the API as the caller API Gateway named.

        The adapter's own headers are taken out of what the app sees, so a client cannot pose as another.
        """
        context = ForwardedLambdaContext.from_header(forwarded.get(LAMBDA_CONTEXT_HEADER))
        identity = forwarded_request_context(forwarded.get(REQUEST_CONTEXT_HEADER))
        caller = ApiCaller(lambda event: self._handler(event, context), identity)
        headers = [
            (name, value) for name, value in scope["headers"] if name.decode("latin-1").lower() not in _FORWARDED
        ]
        try:
            await serve_mounted(
                mounted, {**scope, "headers": headers}, receive, send, caller, max_body_bytes=self._max_body_bytes
            )
        finally:
            # runs a protocol started are counted as the API function counts them (one EMF line per request)
            metrics.flush_metrics(raise_on_empty_metrics=False)

    def _dispatch(self, event: Event, context: ForwardedLambdaContext) -> HttpResponse:
        try:
            for route in self._routes_for(lambda marked: self._handler(marked, context)):
                streamed = route.answer(event) if route.takes(event) else None
                if streamed is not None:
                    return streamed
            return proxy_response(self._handler(event, context))
        finally:
            # runs started here are counted as the API function counts them (one EMF line per request)
            metrics.flush_metrics(raise_on_empty_metrics=False)

    async def _next_chunk(self, iterator: Any) -> bytes | None:
        return await asyncio.get_running_loop().run_in_executor(self._pool, next_chunk, iterator)


async def _read_body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def app_from_environment(environ: Mapping[str, str]) -> StreamingApp:
    """The app of `functions/stream`: the API's resolver and the stream routes, on services built lazily.

    The resolver (Powertools' event handler, the API's routes and models) is built by the first request
    that reaches the API function: a streamed run's events never do, so an instance that serves only
    those never loads it.
    """
    services = api.services_from_environment(environ)
    resolver: list[ApiHandler] = []
    building = threading.Lock()

    def handler(event: Event, context: Any) -> Any:
        with building:
            if not resolver:
                built = api.RequestScopedResolver(
                    traced_by=services, enable_validation=True, json_body_deserializer=api.json_body_reader(services)
                )
                api.register_routes(built, services)
                resolver.append(built.resolve)
        return resolver[0](event, context)

    def routes_for(invoke: Callable[[Event], Any]) -> list[StreamRoute]:
        runtime = services.get().runtime
        return [events_stream_route(runtime), chat_stream_route(runtime, invoke)]

    return StreamingApp(handler, routes_for, protocol_apps=protocol_apps(lambda: services.get().runtime.config))
