"""The HTTP front of `stepwise serve`: uvicorn (h11) and a small ASGI adapter that calls the API function.

Why uvicorn: it is maintained, parses HTTP with h11 (a malformed or negative Content-Length, a bad
request line or oversized headers are answered 400 by the parser, before any of our code runs), keeps
connections alive, and bounds connections (`limit_concurrency`: 503 beyond). What it lacks is added here:

- **Body limit before reading**: a Content-Length over `max_body_bytes` is answered 413 and the body is
  never read; a chunked body is counted as it arrives and refused the moment it passes the limit.
- **Read timeouts**: a connection whose request head has not arrived within `read_timeout_seconds` of
  opening (or of the previous response) is closed (`front_limits.HeadTimeoutProtocol`), and a body not
  whole within `read_timeout_seconds` of the end of its head is answered 408 (however it trickles in:
  the bound is on the whole body, not on each piece).
- **Idle timeout**: a keep-alive connection idle for `idle_timeout_seconds` is closed (uvicorn's own).
- **Bounded workers, two kinds**: handlers are synchronous, so each request runs on a thread of a
  bounded pool. Requests that wait for a run (`waiting_route`: chat completions) have slots of their
  own and are answered 503 at once when all are taken, so they never hold the workers other routes need,
  and a waiting request starts at once, within its documented sync timeout.
- **Bounded streams**: each stream (run events as SSE, streamed chat completions) holds a thread that
  polls the store; the stream routes claim one of `max_streams` slots, at most `max_streams_per_owner`
  of one caller (`stepwise.streaming.slots`), and are answered 503 with `Retry-After` past them. A stream
  ends as soon as its client's connection closes (`send_answer` watches it): its body's wait between
  two reads ends at once, so its thread and its slot are given back within one read of the store.
- **Stopping**: `stop` ends what waits on a run at once: a waiting request is answered 503 (with
  `x-should-retry: false`, since a retried chat completion would start another run) and a stream ends
  with its route's `closing` chunk. Their threads are daemons, so one still reading the store does not
  hold the process's exit.
- **Accepted keys**: given `accepted_keys`, a request presenting any other key (`x-api-key` or
  `Authorization: Bearer`) is answered 401 on every path, the API's, the console's and the protocols',
  as API Gateway's usage plan refuses a key it does not hold (with 403 there). A request with no key
  goes on: the API answers it 401, and the console's page is public.
- **405** for a method a known path does not take (`POST /v1/models`), or that no route takes (TRACE),
  with an `Allow` header naming the path's methods (every route's, for an unknown path). HEAD and
  OPTIONS are such methods: API Gateway serves neither on these resources (no GET-as-HEAD, no CORS), so
  answering them here would let a client work locally that fails deployed.

**Streaming hook.** A route may answer with a body produced over time: `stream_routes` are
`StreamRoute`s, asked on the event loop whether they take the API Gateway event of each request (after
the checks above); the one that takes it answers on a pool of its own (the *openers*, as many as
`workers`), with None to pass the request on, or an `HttpResponse` whose `body` is an iterator of `bytes`
chunks. Each chunk is written to the socket as it is produced (chunked transfer encoding, no
Content-Length); the iterator's `next()` runs on a daemon thread of its own, so a generator may block
(poll the store, sleep) without stalling other connections, and should sleep with its answer's
`hangup.sleep` so that it stops when its client goes. Use it for `text/event-stream` (SSE) answers; the
route sets its own headers (`Content-Type`, `Cache-Control`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import uvicorn

from stepwise.interop.api_calls import ApiCaller
from stepwise.interop.mounts import ProtocolApp, mounted_app, serve_mounted
from stepwise.local.api_gateway import api_gateway_event
from stepwise.local.front_answers import method_not_allowed, stopped_while_waiting, unaccepted_key
from stepwise.local.front_limits import FrontLimits, HeadTimeoutProtocol
from stepwise.steps.api.caller_key import presented_api_key
from stepwise.steps.api.started_runs import observing_started_runs
from stepwise.streaming.answers import (
    Event,
    HttpResponse,
    StreamInterrupted,
    StreamRoute,
    error_answer,
    next_chunk,
    proxy_response,
    send_answer,
)
from stepwise.telemetry.observability import logger

__all__ = ["ApiFront", "FrontLimits", "HttpResponse", "StreamRoute", "bound_listener", "error_answer"]
_STARTUP_SECONDS = 30.0
_STOP_SECONDS = 10


def bound_listener(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` (0: a free port), for a front to listen on; OSError when it is taken.

    Bound before anything else starts, it holds the port: a server started meanwhile on a free port (the local
    Step Functions endpoint, DynamoDB Local) is never given it by the system.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError:
        listener.close()
        raise
    return listener


class ApiFront:
    """Serves `handler` (API Gateway event -> proxy response) over HTTP on 127.0.0.1 with the limits above."""

    def __init__(
        self,
        handler: Callable[[Event], Any],
        *,
        limits: FrontLimits | None = None,
        waiting_handler: Callable[[Event], Any] | None = None,
        waiting_route: Callable[[str, str], bool] = lambda method, path: False,
        stream_routes: Sequence[StreamRoute] = (),
        protocol_apps: Sequence[ProtocolApp] = (),
        accepted_keys: frozenset[str] = frozenset(),
        listener: socket.socket | None = None,
    ) -> None:
        """`listener`: the socket to serve, bound already (`bound_listener`); a free port's without it."""
        self.limits = limits or FrontLimits()
        self._accepted_keys = accepted_keys
        self._protocol_apps = list(protocol_apps)
        self._handler = handler
        self._waiting_handler = waiting_handler or handler
        self._waiting_route = waiting_route
        self.stream_routes = list(stream_routes)
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="api-worker")
        # streams are opened (first read of the store, a streamed chat's start) on a pool of their own, so a
        # flood of them never holds the workers other requests need
        self._openers = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="api-stream")
        self._waiting_slots = threading.BoundedSemaphore(self.limits.waiting_workers)
        self._stopping = threading.Event()
        # the server's loop and a future it completes when the front stops, both made by the first request
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Future[None] | None = None
        # bound here, so a busy port fails the caller at once (an OSError naming the address)
        self._socket = listener if listener is not None else bound_listener(0)
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            self,
            http=type(
                "HeadTimeoutProtocol",
                (HeadTimeoutProtocol,),
                {"head_timeout_seconds": self.limits.read_timeout_seconds},
            ),
            ws="none",
            lifespan="off",
            interface="asgi3",
            timeout_keep_alive=max(1, round(self.limits.idle_timeout_seconds)),
            limit_concurrency=self.limits.max_connections,
            timeout_graceful_shutdown=_STOP_SECONDS,
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ApiFront:
        """Serve on a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="stepwise-api", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _STARTUP_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP front did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop accepting connections; requests in progress get a short grace period, and those waiting
        on a run are answered at once."""
        self._stopping.set()
        if self._loop is not None:
            # a loop already closed has nothing waiting on it any more
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._settle_stopped)
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(_STOP_SECONDS * 2)
        self._socket.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._openers.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ApiFront:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application."""
        if scope["type"] != "http":
            return
        # the app is called once the request's head is whole: the body's time starts here
        body_deadline = time.monotonic() + self.limits.read_timeout_seconds
        method = scope["method"]
        if not self._key_accepted(scope):
            await self._send(send, method, unaccepted_key())
            return
        mounted = mounted_app(self._protocol_apps, scope["path"])
        if mounted is not None:
            await self._serve_protocol(mounted, scope, receive, send)
            return
        refused = method_not_allowed(method, scope["path"])
        if refused is not None:
            await self._send(send, method, refused)
            return
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        body = await self._read_body(headers, receive, body_deadline)
        if isinstance(body, HttpResponse):
            await self._send(send, method, body)
            return
        event = self._event(scope, headers, body)
        try:
            answer = await self._dispatch(method, event)
        except Exception:  # what API Gateway answers when the function itself fails
            logger.exception("the API function failed", extra={"path": event["path"]})
            answer = error_answer(502, "bad_gateway", "Internal server error")
        await self._send(send, method, answer, receive)

    def _key_accepted(self, scope: dict[str, Any]) -> bool:
        """False when keys are set and the request presents a key that is not one of them."""
        if not self._accepted_keys:
            return True
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        key = presented_api_key(headers)
        # compared in constant time, each against every accepted key, so the answer's timing tells nothing
        if key is None:
            return True
        matches = [hmac.compare_digest(key.encode(), accepted.encode()) for accepted in self._accepted_keys]
        return any(matches)

    async def _serve_protocol(self, mounted: ProtocolApp, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """A protocol's request (A2A, MCP): its app answers, calling the API as the request's caller."""
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        identity = self._event(scope, headers, b"")["requestContext"]
        host = next((value for name, value in headers if name.lower() == "host"), "")
        caller = ApiCaller(self._handler, identity, host=host)
        await serve_mounted(mounted, scope, receive, send, caller, max_body_bytes=self.limits.max_body_bytes)

    async def _read_body(self, headers: list[tuple[str, str]], receive: Any, deadline: float) -> bytes | HttpResponse:
        limit = self.limits.max_body_bytes
        declared = next((value for name, value in headers if name.lower() == "content-length"), None)
        too_large = error_answer(413, "payload_too_large", f"the body is over {limit} bytes", connection="close")
        if declared is not None and int(declared) > limit:
            return too_large
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                seconds = self.limits.read_timeout_seconds
                return error_answer(
                    408, "request_timeout", f"the body did not arrive in full within {seconds:g} s of the request head"
                )
            if message["type"] == "http.disconnect":
                return error_answer(400, "bad_request", "the client disconnected before sending its body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _event(self, scope: dict[str, Any], headers: list[tuple[str, str]], body: bytes) -> Event:
        target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        host, port = scope.get("server") or ("127.0.0.1", self.port)
        client = scope.get("client") or ("127.0.0.1", 0)
        return api_gateway_event(
            method=scope["method"],
            target=target,
            headers=headers,
            body=body,
            host=f"{host}:{port}",
            source_ip=client[0],
        )

    async def _dispatch(self, method: str, event: Event) -> HttpResponse:
        loop = asyncio.get_running_loop()
        # asked here, on the loop: a request no stream route takes never waits for the openers' pool
        route = next((each for each in self.stream_routes if each.takes(event)), None)
        if route is not None:
            streamed = await loop.run_in_executor(self._openers, route.answer, event)
            if streamed is not None:
                return streamed
        if not self._waiting_route(method, event["resource"]):
            return proxy_response(await loop.run_in_executor(self._pool, self._handler, event))
        if not self._waiting_slots.acquire(blocking=False):
            message = f"all {self.limits.waiting_workers} slots for waiting requests are busy; retry, or poll a run"
            return error_answer(503, "unavailable", message, retry_after="1")
        started: list[str] = []

        def handle_observed(waiting_event: Event) -> Any:
            with observing_started_runs(started.append):
                return self._waiting_handler(waiting_event)

        try:
            waiting = _on_daemon_thread(handle_observed, event, name="api-waiting")
            return proxy_response(await self._unless_stopping(waiting))
        except StreamInterrupted:
            return stopped_while_waiting(started[-1] if started else None)
        finally:
            self._waiting_slots.release()

    async def _send(self, send: Any, method: str, answer: HttpResponse, receive: Any = None) -> None:
        if isinstance(answer.body, bytes):
            await send_answer(send, method, answer, self._next_chunk)
            return
        await send_answer(send, method, answer, self._next_chunk, receive=receive, stopping=self._stop_signal())

    async def _next_chunk(self, iterator: Iterator[bytes]) -> bytes | None:
        chunk: bytes | None = await _on_daemon_thread(next_chunk, iterator, name="api-streaming")
        return chunk

    def _stop_signal(self) -> asyncio.Future[None]:
        """A future done once the front is stopping (cancelling it cancels nothing else)."""
        if self._stopped is None:
            self._loop = asyncio.get_running_loop()
            self._stopped = self._loop.create_future()
            if self._stopping.is_set():
                self._settle_stopped()
        return asyncio.shield(self._stopped)

    def _settle_stopped(self) -> None:
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    async def _unless_stopping(self, waiting: Awaitable[Any]) -> Any:
        """What `waiting` gives, or `StreamInterrupted` as soon as the front is stopping."""
        future = asyncio.ensure_future(waiting)
        stopping = self._stop_signal()
        try:
            await asyncio.wait({future, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if future.done():
            return future.result()
        raise StreamInterrupted


async def _on_daemon_thread(function: Callable[..., Any], *args: Any, name: str) -> Any:
    """`function(*args)` on a daemon thread of its own (it may block on a run for as long as it waits)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (function(*args), None)
        except Exception as exc:
            outcome = (None, exc)
        # the loop is closed when the front stopped before this call ended: nobody waits for it any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
