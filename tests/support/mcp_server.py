"""A real MCP server (the SDK's MCPServer behind uvicorn) on a free 127.0.0.1 port, for tool tests.

It speaks streamable HTTP at ``/mcp``, or the legacy HTTP+SSE transport at ``/sse`` with
``transport="sse"``.

    server = MCPServer("test", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        '''Add two numbers.'''
        return a + b

    with LoopbackMcpServer(server) as running:
        ...  # point an `mcp:` entry at running.url
        assert running.requests[0].headers["authorization"] == "Bearer ..."

Every HTTP request the server receives is recorded (method, path, lower-cased headers) before it is
handled, so a test can check what the client sent, or that nothing was sent at all.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import uvicorn
from mcp.server.mcpserver import MCPServer

from tests.support.polling import CROSS_PROCESS_SECONDS

# a bound for a failure only: a loaded machine starts a server thread many times slower than a quiet one
_START_TIMEOUT_SECONDS = CROSS_PROCESS_SECONDS


@dataclass(frozen=True)
class McpRequest:
    """One HTTP request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]


class LoopbackMcpServer:
    """Serves ``server`` at ``url``: ``http://127.0.0.1:<port>/mcp`` (streamable HTTP) or ``.../sse``."""

    def __init__(self, server: MCPServer, *, transport: Literal["streamable-http", "sse"] = "streamable-http") -> None:
        self._app = server.sse_app() if transport == "sse" else server.streamable_http_app()
        self._path = "/sse" if transport == "sse" else "/mcp"
        self._requests: list[McpRequest] = []
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        if self._socket is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}{self._path}"

    @property
    def requests(self) -> list[McpRequest]:
        """Every HTTP request received so far, in order."""
        with self._lock:
            return list(self._requests)

    async def _recording_app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            with self._lock:
                self._requests.append(McpRequest(scope["method"], scope["path"], headers))
        await self._app(scope, receive, send)

    def start(self) -> LoopbackMcpServer:
        """Bind a free loopback port and serve in a daemon thread until `stop`."""
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            self._recording_app, log_level="warning", lifespan="on", interface="asgi3", timeout_graceful_shutdown=1
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [self._socket]}, name="loopback-mcp-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        while not self._uvicorn.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and close the port."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=_START_TIMEOUT_SECONDS)
        if self._socket is not None:
            self._socket.close()
        self._uvicorn = self._thread = None

    def __enter__(self) -> LoopbackMcpServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
