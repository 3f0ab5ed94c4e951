"""A socket server run from a daemon thread: the loopback services of local runs share this plumbing."""

from __future__ import annotations

import socketserver
import threading


class BackgroundServer:
    """Serves `server` on a daemon thread until `stop`; `url` is its address as an http URL."""

    def __init__(self, server: socketserver.TCPServer, *, name: str) -> None:
        self._server = server
        # a short poll interval makes stop() quick
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://<host>:<port>`` of the listening socket."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop serving, release the port and wait for the serving thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
