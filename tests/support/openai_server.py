"""A fake OpenAI-compatible server on 127.0.0.1 for tests: scripted replies, recorded requests.

    with FakeOpenAIServer() as server:
        server.enqueue(body=chat_completion(content="Hello"))
        ...  # point a client at server.base_url
        assert server.requests[0].body["model"] == "gpt-test"

Replies are served in the order they were enqueued to `POST /v1/chat/completions`; when the queue is
empty the default reply is served (see `default`). A request with `"stream": true` whose reply body is
a list of chunk dicts gets them as server-sent events, then `data: [DONE]`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback_http import LoopbackHttpServer

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"

Body = dict[str, Any] | list[dict[str, Any]] | str


@dataclass(frozen=True)
class ScriptedReply:
    """One reply the server will send: status, body (JSON object, chunk list or raw text), delay."""

    status: int = 200
    body: Body = field(default_factory=dict)
    delay_seconds: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received; header names are lower-cased, `body` is the decoded JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def chat_completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (12, 7),
    model: str = "fake-model",
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A realistic `chat.completion` body.

    `tool_calls` items are `{"name", "arguments", "id"?}`; dict arguments are JSON-encoded as OpenAI
    does, a string is sent as is (to fake a model that wrote broken JSON). `usage` is
    (prompt_tokens, completion_tokens).
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id", f"call_fake_{index}"),
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for index, call in enumerate(tool_calls)
        ]
    prompt_tokens, completion_tokens = usage
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chat_completion_chunks(pieces: list[str], model: str = "fake-model") -> list[dict[str, Any]]:
    """`chat.completion.chunk` bodies streaming `pieces` as content deltas, then a `stop` chunk."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in pieces
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


class FakeOpenAIServer(LoopbackHttpServer):
    """A loopback OpenAI-compatible server (free port on 127.0.0.1); use it as a context manager."""

    def __init__(self, validator: Callable[[Any], ScriptedReply | None] | None = None) -> None:
        """Bind to a free loopback port; requests are served once `start` (or `with`) runs.

        `validator` sees each request's body first: the reply it returns (a provider's refusal) is sent
        instead of the next scripted one, as a strict provider refuses before it generates anything.
        """
        self._validator = validator
        self._lock = threading.Lock()
        self._replies: deque[ScriptedReply] = deque()
        self._default = ScriptedReply(body=chat_completion(content="ok"))
        self._requests: list[RecordedRequest] = []
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        """The URL to configure as an OpenAI `base_url`, ending in `/v1`."""
        return f"{self.origin}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def enqueue(
        self,
        status: int = 200,
        body: Body | None = None,
        delay_seconds: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Queue one reply; `body` defaults to a plain completion saying "ok"."""
        reply = ScriptedReply(
            status, chat_completion(content="ok") if body is None else body, delay_seconds, headers or {}
        )
        with self._lock:
            self._replies.append(reply)

    def default(
        self,
        status: int = 200,
        body: Body | None = None,
        delay_seconds: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Set the reply served whenever the queue is empty."""
        with self._lock:
            self._default = ScriptedReply(
                status, chat_completion(content="ok") if body is None else body, delay_seconds, headers or {}
            )

    def take_queued(self) -> list[ScriptedReply]:
        """The replies no request has taken yet, taken off the queue."""
        with self._lock:
            queued = list(self._replies)
            self._replies.clear()
        return queued

    def _record_and_pick(self, request: RecordedRequest) -> ScriptedReply:
        refusal = self._validator(request.body) if self._validator is not None else None
        with self._lock:
            self._requests.append(request)
            if refusal is not None:
                return refusal
            return self._replies.popleft() if self._replies else self._default


@contextmanager
def script_of_its_own(server: FakeOpenAIServer, *, must_be_read: bool = True) -> Iterator[None]:
    """A test's turn on a server it shares with other tests (a module's): it starts with no reply queued, and what it
    leaves unread is taken off, so the next test's run never reads it as its own. With `must_be_read`, a reply left
    unread fails the test (its run stopped short); tests that start a run and never wait for it (the run's call may
    come after they end) leave one legitimately, and pass False."""
    server.take_queued()
    yield
    left = server.take_queued()
    if must_be_read:
        unread = f"the test left {len(left)} scripted model replies unread (its run stopped short): {left!r:.500}"
        assert not left, unread


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._send_json(400, {"error": {"message": "request body is not JSON"}})
                return
            if self.path != CHAT_COMPLETIONS_PATH:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            recorded = RecordedRequest(
                method="POST",
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
            )
            reply = server._record_and_pick(recorded)
            if reply.delay_seconds and server._stopping.wait(reply.delay_seconds):
                return
            wants_stream = isinstance(body, dict) and body.get("stream") is True
            try:
                if wants_stream and isinstance(reply.body, list):
                    self._send_stream(reply.status, reply.body, reply.headers)
                else:
                    self._send_body(reply)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (a timeout test); nothing is left to answer.
                return

        def _send_json(self, status: int, body: dict[str, Any]) -> None:
            self._send_body(ScriptedReply(status=status, body=body))

        def _send_body(self, reply: ScriptedReply) -> None:
            is_text = isinstance(reply.body, str)
            payload = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/plain" if is_text else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_stream(self, status: int, chunks: list[dict[str, Any]], headers: dict[str, str]) -> None:
            # No Content-Length: the HTTP/1.0 connection closing marks the end of the stream.
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            # Test output stays readable; the requests are in `server.requests`.
            return

    return Handler
