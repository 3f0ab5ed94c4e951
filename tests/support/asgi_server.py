"""An ASGI app served by uvicorn on a free loopback port for the length of a `with` block, as `run.sh`
serves the streaming function's app behind the Lambda Web Adapter."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

_STARTUP_SECONDS = 30.0


@contextmanager
def served_on_loopback(app: Any) -> Iterator[str]:
    """Serve `app` on 127.0.0.1; yields its base URL, stops the server on exit."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + _STARTUP_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the ASGI server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)
        listener.close()
