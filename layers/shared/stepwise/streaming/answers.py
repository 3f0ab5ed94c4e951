"""What a route answers (a status, headers and a body that may be produced over time), and how it is
written to an ASGI server.

A body is bytes, or an iterator of chunks to stream: its `next()` is handed to `next_chunk` (a worker
thread), so a generator may block (poll the store, sleep) without stalling other connections. A streamed
body goes out with chunked transfer encoding, each chunk as soon as it is produced.

A streamed body ends with its client. `send_answer` watches the connection while it streams; once the
client has gone (or the server stops) it sets the answer's `hangup`, whose `sleep` the body waits with
between reads of the store: the wait ends at once with `ClientGone`, so the body's thread is freed within
one read of the store, and the body's iterator is closed (its `finally` runs, releasing what it holds).
uvicorn writes nothing to a connection the client closed and raises no error, so a write alone would
never tell; the closed connection comes in through ASGI's `receive` (`http.disconnect`).
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stepwise.models.api_responses import ErrorBody, ErrorResponse

Event = dict[str, Any]
Body = bytes | Iterator[bytes]
NextChunk = Callable[[Iterator[bytes]], Awaitable[bytes | None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class ClientGone(Exception):
    """Raised by `Hangup.sleep` once nobody reads the streamed answer any more: the body stops there."""


class Hangup:
    """Whether a streamed answer is still read: set when its client has gone or the server stops."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        """Nobody reads the answer any more."""
        self._event.set()

    def is_set(self) -> bool:
        """Whether the answer was hung up."""
        return self._event.is_set()

    def sleep(self, seconds: float) -> None:
        """Wait `seconds`, as `time.sleep`; `ClientGone` at once when the answer is (or gets) hung up."""
        if self._event.wait(seconds):
            raise ClientGone


@dataclass
class HttpResponse:
    """What a route answers: a status, headers and a body (bytes, or chunks to stream)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Body = b""
    # Written instead of the rest when the server stops before a streamed body's end (`StreamInterrupted`).
    closing: bytes = b""
    # Set by `send_answer` when nobody reads a streamed body any more; the body waits with its `sleep`.
    hangup: Hangup = field(default_factory=Hangup)


class StreamInterrupted(Exception):
    """Raised by a `NextChunk` when the server is stopping: the stream ends with the answer's `closing`."""


@dataclass(frozen=True)
class StreamRoute:
    """A route whose answer may be streamed.

    `takes` says at once, from the request's method, resource and headers (no I/O: a front asks it on its
    event loop for every request), whether the route may answer the API Gateway event of a request;
    `answer`, run on a worker thread (it may read the store or start a run), gives the answer to send, or
    None to pass the request on.
    """

    takes: Callable[[Event], bool]
    answer: Callable[[Event], HttpResponse | None]


def error_answer(
    status: int, error_type: str, message: str, *, details: dict[str, Any] | None = None, **headers: str
) -> HttpResponse:
    """An error in the API's `{"error": {...}}` shape; `headers` are named in Python (`retry_after`)."""
    body = ErrorResponse(error=ErrorBody(type=error_type, message=message, details=details or {}))
    pairs = [("content-type", "application/json")] + [
        (name.replace("_", "-"), value) for name, value in headers.items()
    ]
    return HttpResponse(status, pairs, body.model_dump_json().encode("utf-8"))


def proxy_response(response: Any) -> HttpResponse:
    """The HTTP response of a Lambda proxy integration result, as API Gateway writes it."""
    if not isinstance(response, dict):
        return error_answer(502, "bad_gateway", "the API function answered with no response")
    raw = response.get("body") or ""
    body = base64.b64decode(raw) if response.get("isBase64Encoded") else str(raw).encode("utf-8")
    headers = {name: [str(value)] for name, value in (response.get("headers") or {}).items()}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[name] = [str(value) for value in values]
    pairs = [(name, value) for name, values in headers.items() if name.lower() != "content-length" for value in values]
    return HttpResponse(int(response.get("statusCode", 502)), pairs, body)


def next_chunk(iterator: Iterator[bytes]) -> bytes | None:
    """The next chunk of a streamed body, None at its end or once its client has gone (run on a worker
    thread: it may block)."""
    try:
        return next(iterator, None)
    except ClientGone:
        return None


class _ClientLeft(Exception):
    """The client's connection closed while its answer was being streamed."""


async def _client_leaves(receive: Receive) -> None:
    """Returns once the client's connection is closed (the request's body was read before)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class _Chunks:
    """A streamed body's chunks, one at a time; its iterator is closed once no thread runs it any more."""

    def __init__(self, body: Iterator[bytes], produce: NextChunk) -> None:
        self._iterator = body
        self._produce = produce
        self._pending: asyncio.Future[bytes | None] | None = None

    async def next(self, gone: asyncio.Future[None] | None, stopping: asyncio.Future[None] | None) -> bytes | None:
        """The next chunk, None at the end; `_ClientLeft` as soon as `gone` is done, `StreamInterrupted` as
        soon as `stopping` is (the chunk being produced is left to its thread)."""
        pending = self._pending = asyncio.ensure_future(self._produce(self._iterator))
        ends: set[asyncio.Future[Any]] = {end for end in (gone, stopping) if end is not None}
        if ends:
            await asyncio.wait({pending, *ends}, return_when=asyncio.FIRST_COMPLETED)
            if gone is not None and gone.done():
                raise _ClientLeft
            if stopping is not None and stopping.done():
                raise StreamInterrupted
        return await pending

    def close(self) -> None:
        """Close the body's iterator now, or once the `next()` a thread is running returns."""
        pending = self._pending
        if pending is not None and not pending.done():
            pending.add_done_callback(self._close_after)
            return
        self._close()

    def _close_after(self, finished: asyncio.Future[bytes | None]) -> None:
        if finished.cancelled():
            return  # the server is shutting down: its thread may still run the iterator, and ends with it
        finished.exception()  # retrieved: nobody awaits a chunk produced for a client that has gone
        self._close()

    def _close(self) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()


async def send_answer(
    send: Any,
    method: str,
    answer: HttpResponse,
    produce: NextChunk,
    *,
    receive: Receive | None = None,
    stopping: Awaitable[None] | None = None,
) -> None:
    """Write `answer` with ASGI's `send`: bytes with a Content-Length, chunks as each is produced.

    A streamed body ends as soon as its client's connection closes (seen through `receive`): nothing more
    is written. It ends with the answer's `closing` once `stopping` completes (the server stops). Either
    way its `hangup` is set, and its iterator is closed once the chunk being produced (if any) is done.
    """
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    if isinstance(answer.body, bytes):
        headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else answer.body})
        return
    chunks = _Chunks(answer.body, produce)
    gone = asyncio.ensure_future(_client_leaves(receive)) if receive is not None else None
    stopped = asyncio.ensure_future(stopping) if stopping is not None else None
    try:
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        while (chunk := await chunks.next(gone, stopped)) is not None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except _ClientLeft:
        answer.hangup.set()
        return
    except StreamInterrupted:
        answer.hangup.set()
        if answer.closing:
            await send({"type": "http.response.body", "body": answer.closing, "more_body": True})
    finally:
        for end in (gone, stopped):
            if end is not None:
                end.cancel()
        chunks.close()
    await send({"type": "http.response.body", "body": b""})
