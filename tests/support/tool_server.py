"""A loopback HTTP server for tool tests that can be told to misbehave, and that records every request.

    with ScriptableToolServer() as server:
        server.on("/v1/boom", Status(500, "database on fire"))
        server.on("/v1/slow", Hang(5))
        ...  # point an API's url at server.url + "/v1"
        assert server.requests[0].path == "/v1/boom"

A path is matched by its longest configured prefix (on the raw path, before the query); anything
unmatched gets the default behaviour, `Echo()` unless another is given. Every request is recorded
before it is answered, so a test can also assert that a server received nothing at all.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    """A request as received: raw path and query, parsed query, lower-cased headers, raw body."""

    method: str
    path: str
    raw_query: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Json:
    """Answer with a fixed JSON document."""

    payload: Any
    status: int = 200


@dataclass(frozen=True)
class Status:
    """Answer with a status code and a plain-text body (a 500 by default)."""

    status: int = 500
    body: str = "internal error"


@dataclass(frozen=True)
class Hang:
    """Wait this long before answering (released early when the server stops)."""

    seconds: float


@dataclass(frozen=True)
class Reset:
    """Read the request, then reset the connection (TCP RST) without answering."""


@dataclass(frozen=True)
class HugeBody:
    """Answer 200 with ``size`` bytes of text, sent in chunks."""

    size: int = 1_000_000
    content_type: str = "text/plain"
    fill: bytes = b"x"


@dataclass(frozen=True)
class Binary:
    """Answer 200 with bytes that are not text."""

    data: bytes = field(default_factory=lambda: b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    content_type: str = "application/octet-stream"


@dataclass(frozen=True)
class Raw:
    """Answer with exactly these bytes, whatever they are, under this content type."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200
    content_encoding: str | None = None


@dataclass(frozen=True)
class Redirect:
    """Answer with a redirect to ``location``."""

    location: str
    status: int = 302


@dataclass(frozen=True)
class Endless:
    """Answer 200 with a chunked body that never ends: ``piece`` every ``interval`` seconds (0: as fast as the
    client reads) until the client goes away or the server stops."""

    piece: bytes = b" " * 65_536
    interval: float = 0.0
    content_type: str = "application/json"


@dataclass(frozen=True)
class Echo:
    """Answer with the request as JSON: method, path, query, headers and body (text)."""

    status: int = 200


@dataclass(frozen=True)
class Judged:
    """Answer like `Echo` when ``judge`` finds nothing wrong with the request, else 400 with its problems."""

    judge: Callable[[RecordedRequest], list[str]]


Behaviour = Json | Status | Hang | Reset | HugeBody | Endless | Binary | Raw | Redirect | Echo | Judged


class ScriptableToolServer:
    """A threaded HTTP server on a free 127.0.0.1 port; see the module docstring."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self._default: Behaviour = default if default is not None else Echo()
        self._routes: dict[str, Behaviour] = {}
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return int(self._server.server_address[1])

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    def on(self, path_prefix: str, behaviour: Behaviour) -> None:
        """Answer requests whose raw path starts with ``path_prefix`` with ``behaviour``."""
        with self._lock:
            self._routes[path_prefix] = behaviour

    def behaviour_for(self, path: str) -> Behaviour:
        """The behaviour of the longest matching prefix, or the default."""
        with self._lock:
            matches = [prefix for prefix in self._routes if path.startswith(prefix)]
            return self._routes[max(matches, key=len)] if matches else self._default

    def record(self, request: RecordedRequest) -> None:
        """Remember a received request."""
        with self._lock:
            self._requests.append(request)

    def start(self) -> ScriptableToolServer:
        """Start serving in a daemon thread."""
        server = _RecordingServer(("127.0.0.1", 0), _ScriptedHandler)
        server.owner = self
        self._server = server
        # A short poll interval keeps stop() (and so every test's teardown) quick.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="scriptable-tool-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging handlers, stop serving and close the port."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptableToolServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptableToolServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: clients that hang up early (capped bodies, timeouts) are what these tests provoke."""


class _ScriptedHandler(BaseHTTPRequestHandler):
    server: _RecordingServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, delayed ACKs stall every reply.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        recorded = RecordedRequest(
            method=self.command,
            path=parts.path,
            raw_query=parts.query,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        owner.record(recorded)
        behaviour = owner.behaviour_for(parts.path)
        try:
            self._behave(behaviour, recorded, owner.stopping)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _behave(self, behaviour: Behaviour, recorded: RecordedRequest, stopping: threading.Event) -> None:
        if isinstance(behaviour, Json):
            self._reply(behaviour.status, json.dumps(behaviour.payload).encode(), "application/json")
        elif isinstance(behaviour, Status):
            self._reply(behaviour.status, behaviour.body.encode(), "text/plain; charset=utf-8")
        elif isinstance(behaviour, Hang):
            stopping.wait(behaviour.seconds)
            self._reply(200, b'{"late": true}', "application/json")
        elif isinstance(behaviour, Reset):
            self._reset()
        elif isinstance(behaviour, HugeBody):
            self._huge(behaviour)
        elif isinstance(behaviour, Endless):
            self._endless(behaviour, stopping)
        elif isinstance(behaviour, Binary):
            self._reply(200, behaviour.data, behaviour.content_type)
        elif isinstance(behaviour, Raw):
            encoding = {"Content-Encoding": behaviour.content_encoding} if behaviour.content_encoding else None
            self._reply(behaviour.status, behaviour.body, behaviour.content_type, extra_headers=encoding)
        elif isinstance(behaviour, Judged):
            problems = behaviour.judge(recorded)
            if problems:
                self._reply(400, json.dumps({"problems": problems}).encode(), "application/json")
            else:
                self._reply(200, json.dumps(_echo(recorded)).encode(), "application/json")
        elif isinstance(behaviour, Redirect):
            self._reply(behaviour.status, b"", "text/plain", extra_headers={"Location": behaviour.location})
        else:
            self._reply(behaviour.status, json.dumps(_echo(recorded)).encode(), "application/json")

    def _reply(self, status: int, body: bytes, content_type: str, extra_headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, behaviour: HugeBody) -> None:
        self.send_response(200)
        self.send_header("Content-Type", behaviour.content_type)
        self.send_header("Content-Length", str(behaviour.size))
        self.end_headers()
        chunk = behaviour.fill * 65_536
        remaining = behaviour.size
        while remaining > 0:
            piece = chunk[: min(remaining, len(chunk))]
            self.wfile.write(piece)
            remaining -= len(piece)

    def _endless(self, behaviour: Endless, stopping: threading.Event) -> None:
        self.send_response(200)
        self.send_header("Content-Type", behaviour.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"%x\r\n%s\r\n" % (len(behaviour.piece), behaviour.piece)
        # Ends when a write fails (the client closed the connection) or the server stops.
        while not stopping.wait(behaviour.interval):
            self.wfile.write(chunk)
        self.close_connection = True

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of an orderly FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def finish(self) -> None:
        try:
            super().finish()
        except (OSError, ValueError):
            # The connection was reset on purpose, or the client went away.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent."""


def _echo(recorded: RecordedRequest) -> dict[str, Any]:
    return {
        "method": recorded.method,
        "path": recorded.path,
        "query": recorded.query,
        "headers": recorded.headers,
        "body": recorded.body.decode("utf-8", errors="replace"),
    }
