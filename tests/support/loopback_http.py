"""The HTTP server the provider fakes share: a ThreadingHTTPServer on a free 127.0.0.1 port, served from a daemon
thread, started and stopped as a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LoopbackHttpServer:
    """Serves `handler` on 127.0.0.1 once `start` (or `with`) runs; `stop` releases the port."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        # Set on stop, so a reply delayed for a timeout test does not hold shutdown.
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # A short poll interval: `shutdown` waits for the loop to notice, once per fixture teardown.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True)

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Serve in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
