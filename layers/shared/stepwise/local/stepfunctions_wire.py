"""The HTTP side of the local Step Functions endpoint: AWS JSON 1.0 requests in, the operation's answer out.

Connections are kept alive (HTTP/1.1), as the service's are: the API function's client sends each
StartExecution on a connection it already holds, where it used to open one per request, and the server
started a thread to serve each (`stepwise serve`'s burst: one connection, one accept and one thread a run).
A connection's thread now serves its requests until the client closes it or the server stops.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TARGET_PREFIX = "AWSStepFunctions."
CONTENT_TYPE = "application/x-amz-json-1.0"


class ServiceError(Exception):
    """An error the endpoint answers with, named as the real service names it (`__type`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class EndpointServer(ThreadingHTTPServer):
    """Serves `dispatch(operation, request)` on a free 127.0.0.1 port, a thread per open connection."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, dispatch: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), _RequestHandler)
        self.dispatch = dispatch
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def opened(self, connection: socket.socket) -> None:
        """A connection's thread began serving it."""
        with self._connections_lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        """A connection's thread is done with it."""
        with self._connections_lock:
            self._connections.discard(connection)

    def server_close(self) -> None:
        """Stop listening, and end every kept-alive connection at its next read: a request in progress is
        still answered (only the reading side is shut), and an idle connection's thread ends at once."""
        super().server_close()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RD)
            except OSError:
                continue  # closed meanwhile by its client


class _RequestHandler(BaseHTTPRequestHandler):
    """AWS JSON 1.0 requests on one connection: the operation from X-Amz-Target, its input from the JSON body."""

    server: EndpointServer
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has its Content-Length
    # An answer is written in two pieces (head, body): with Nagle's algorithm on a kept-alive connection the
    # body waited for the client's delayed ACK of the head, 40 ms a request.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.closed(self.connection)
        super().finish()

    def do_POST(self) -> None:
        target = self.headers.get("X-Amz-Target", "")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            if not target.startswith(TARGET_PREFIX):
                raise ServiceError("UnknownOperationException", f"unknown target {target!r}")
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                raise ServiceError("SerializationException", "the request body is not JSON") from None
            if not isinstance(request, dict):
                raise ServiceError("SerializationException", "the request body must be a JSON object")
            status, body = HTTPStatus.OK, self.server.dispatch(target.removeprefix(TARGET_PREFIX), request)
        except ServiceError as error:
            status, body = HTTPStatus.BAD_REQUEST, {"__type": error.code, "message": error.message}
        self._reply(status, body)

    def _reply(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # A sync caller that gave up (its read timeout) has closed the connection; nothing to tell it.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests are not logged."""
