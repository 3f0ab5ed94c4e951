"""A fault-injecting HTTP proxy on 127.0.0.1 in front of a DynamoDB endpoint.

    with FaultyDynamoDBProxy(upstream_url) as proxy:
        proxy.arm(EveryNth(period=5, fault=Fault.THROTTLE))
        ...  # point the store's endpoint at proxy.url
        proxy.disarm()

While armed, every proxied request is numbered from 1 and the schedule decides, by that number,
whether it is forwarded or answered with a fault: a `ProvisionedThroughputExceededException` (HTTP 400
with DynamoDB's JSON error body, as the real service sends it), or a connection closed without an
answer, either before the request reaches the table or after it was applied (the answer is lost, so a
retry of a write meets its own first attempt). Disarmed, every request is forwarded.
"""

from __future__ import annotations

import enum
import http.client
import json
import socket
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import urlsplit

THROTTLE_ERROR_TYPE = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
# Hop-by-hop headers describe one connection; the proxy's own connection sets its own.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"})


class Fault(enum.Enum):
    """What the proxy does with one request."""

    FORWARD = "forward"
    THROTTLE = "throttle"
    DROP_BEFORE = "drop before forwarding"
    DROP_AFTER = "drop after forwarding"


class FaultSchedule(Protocol):
    """Decides the fate of the `number`-th request (from 1) since the proxy was armed."""

    def __call__(self, number: int) -> Fault:
        """The fault for this request, or `Fault.FORWARD`."""
        ...


@dataclass(frozen=True)
class Always:
    """The same fault for every request."""

    fault: Fault

    def __call__(self, number: int) -> Fault:
        """`fault`, whatever the request."""
        return self.fault


@dataclass(frozen=True)
class EveryNth:
    """Bursts of `burst` faults, one burst starting at every `period`-th request (from request `period`).

    The fraction of faulty requests is `burst / period`; `offset` shifts where bursts start.
    """

    period: int
    fault: Fault
    burst: int = 1
    offset: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.burst < self.period:
            raise ValueError("a burst must be at least 1 and shorter than its period")

    def __call__(self, number: int) -> Fault:
        """`fault` inside a burst, `FORWARD` elsewhere."""
        shifted = number - self.offset
        return self.fault if shifted >= self.period and shifted % self.period < self.burst else Fault.FORWARD


@dataclass(frozen=True)
class Combined:
    """Several schedules side by side: the first that injects a fault for a request wins."""

    schedules: tuple[FaultSchedule, ...]

    def __call__(self, number: int) -> Fault:
        """The first fault any schedule gives this request, else `FORWARD`."""
        for schedule in self.schedules:
            fault = schedule(number)
            if fault is not Fault.FORWARD:
                return fault
        return Fault.FORWARD


class FaultyDynamoDBProxy:
    """A threaded HTTP proxy on a free loopback port; see the module docstring."""

    def __init__(self, upstream_url: str) -> None:
        parts = urlsplit(upstream_url)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, not {upstream_url!r}")
        self.upstream = (parts.hostname, parts.port)
        self._lock = threading.Lock()
        self._schedule: FaultSchedule | None = None
        self._armed_requests = 0
        self._injected: Counter[Fault] = Counter()
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="faulty-dynamodb", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, the endpoint to give the store."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def arm(self, schedule: FaultSchedule) -> None:
        """Start injecting faults by `schedule`; requests are numbered from 1 again."""
        with self._lock:
            self._schedule = schedule
            self._armed_requests = 0

    def disarm(self) -> None:
        """Forward every request from now on."""
        with self._lock:
            self._schedule = None

    def injected(self, fault: Fault | None = None) -> int:
        """How many faults (of one kind, or of any kind) were injected since the proxy started."""
        with self._lock:
            if fault is None:
                return sum(self._injected.values())
            return self._injected[fault]

    def decide(self) -> Fault:
        """The fate of the next request, by the schedule armed now."""
        with self._lock:
            if self._schedule is None:
                return Fault.FORWARD
            self._armed_requests += 1
            fault = self._schedule(self._armed_requests)
            if fault is not Fault.FORWARD:
                self._injected[fault] += 1
            return fault

    def start(self) -> FaultyDynamoDBProxy:
        """Serve in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FaultyDynamoDBProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultyDynamoDBProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: connections the proxy drops on purpose end in errors that are not news."""


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _ProxyServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = self.server.proxy.decide()
        if fault is Fault.THROTTLE:
            self._throttle()
            return
        if fault is Fault.DROP_BEFORE:
            self._drop()
            return
        status, headers, answer = self._forward(body)
        if fault is Fault.DROP_AFTER:
            self._drop()
            return
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.server.proxy.upstream
        connection = http.client.HTTPConnection(host, port, timeout=30)
        try:
            headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
            connection.request("POST", self.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _throttle(self) -> None:
        answer = json.dumps(
            {"__type": THROTTLE_ERROR_TYPE, "message": "The level of configured provisioned throughput was exceeded"}
        ).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-RequestId", uuid.uuid4().hex)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _drop(self) -> None:
        # Closing without a status line is what a crashed or restarted front end looks like to the SDK.
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            return

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the test reports what was injected."""
