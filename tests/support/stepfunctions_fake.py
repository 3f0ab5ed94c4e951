"""Step Functions' task-token calls (SendTaskSuccess, SendTaskFailure) as a loopback HTTP server that
answers each request as scripted, for tests of what the API does when a reply is slow, lost or refused.

    with FakeStepFunctions() as sfn:
        ...  # point STEPFUNCTIONS_ENDPOINT_URL at sfn.url
        sfn.script(Reply(meanwhile=run_the_tool, body=None), Reply(400, refusal("TaskTimedOut")))
        ...
        assert [request["taskToken"] for request in sfn.requests] == [...]

The n-th request gets the n-th reply; requests beyond the script get its last one (an empty 200 unscripted).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


def refusal(code: str) -> dict[str, str]:
    """The body of an error Step Functions answers with (awsJson1_0: `__type` names the error)."""
    return {"__type": code, "message": f"{code} (scripted)"}


@dataclass(frozen=True)
class Reply:
    """One request's fate: `meanwhile` runs first with the request's JSON (what Step Functions does with
    it), then, `delay` seconds later, `status` and `body` are sent; with no body the connection is
    dropped unanswered (a reply lost on the way back)."""

    status: int = 200
    body: dict[str, Any] | None = field(default_factory=dict)
    delay: float = 0
    meanwhile: Callable[[dict[str, Any]], None] | None = None


class FakeStepFunctions:
    """A threaded HTTP server on a free 127.0.0.1 port; see the module docstring."""

    def __init__(self) -> None:
        self._replies = [Reply()]
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-stepfunctions", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received so far, as JSON, with its operation under `"operation"`."""
        with self._lock:
            return list(self._requests)

    def script(self, *replies: Reply) -> None:
        """Answer the requests from now on with `replies`, in order."""
        with self._lock:
            self._replies = list(replies) or [Reply()]
            self._requests.clear()

    def take(self, request: dict[str, Any]) -> Reply:
        """Record a request; the reply scripted for it."""
        with self._lock:
            self._requests.append(request)
            return self._replies[min(len(self._requests), len(self._replies)) - 1]

    def __enter__(self) -> FakeStepFunctions:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeStepFunctions

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: clients that gave up waiting are what these tests provoke."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operation = (self.headers.get("X-Amz-Target") or "").rpartition(".")[2]
        request = json.loads(body or b"{}") | {"operation": operation}
        reply = owner.take(request)
        if reply.meanwhile is not None:
            reply.meanwhile(request)
        if owner.stopping.wait(reply.delay) or reply.body is None:
            self.close_connection = True
            return
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent."""
