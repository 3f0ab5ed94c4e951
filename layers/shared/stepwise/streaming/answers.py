"""What a route answers (a status, headers and a body that may be produced over time), and how it is
written to an ASGI server.

A body is bytes, or chunks to stream: an async iterable is consumed on the event loop; a plain
iterable's `next()` is handed to `next_chunk` (a worker thread), so a generator may block (poll the
store, sleep) without stalling other connections. A streamed body goes out with chunked transfer
encoding, each chunk as soon as it is produced.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stepwise.models.api_responses import ErrorBody, ErrorResponse

Event = dict[str, Any]
Body = bytes | Iterable[bytes] | AsyncIterable[bytes]
NextChunk = Callable[[Iterator[bytes]], Awaitable[bytes | None]]


@dataclass
class HttpResponse:
    """What a route answers: a status, headers and a body (bytes, or chunks to stream)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Body = b""
    # Written instead of the rest when the server stops before a streamed body's end (`StreamInterrupted`).
    closing: bytes = b""


class StreamInterrupted(Exception):
    """Raised by a `NextChunk` when the server is stopping: the stream ends with the answer's `closing`."""


# Given the API Gateway event of a request: None to pass it on, or the answer to send.
StreamRoute = Callable[[Event], HttpResponse | None]


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
    """The next chunk of a streamed body, None at its end (run on a worker thread: it may block)."""
    return next(iterator, None)


async def _chunks(body: Iterable[bytes] | AsyncIterable[bytes], produce: NextChunk) -> AsyncIterator[bytes]:
    if isinstance(body, AsyncIterable):
        async for chunk in body:
            yield chunk
        return
    iterator: Iterator[bytes] = iter(body)
    while True:
        produced = await produce(iterator)
        if produced is None:
            return
        yield produced


async def send_answer(send: Any, method: str, answer: HttpResponse, produce: NextChunk) -> None:
    """Write `answer` with ASGI's `send`: bytes with a Content-Length, chunks as each is produced."""
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    if isinstance(answer.body, bytes):
        headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else answer.body})
        return
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    try:
        async for chunk in _chunks(answer.body, produce):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except StreamInterrupted:
        if answer.closing:
            await send({"type": "http.response.body", "body": answer.closing, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
