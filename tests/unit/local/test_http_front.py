"""The HTTP front's limits, over real sockets on loopback: body, time, workers, methods, streaming.

The front serves a small handler of the test's own (an API Gateway event in, a proxy response out), so
each limit is seen on its own; `tests/e2e` serve the real API function through the same front.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from stepwise.local.front_answers import chat_is_waiting
from stepwise.local.http_front import ApiFront, FrontLimits, HttpResponse, StreamRoute, bound_listener
from stepwise.streaming.answers import ClientGone, Hangup

LIMITS = FrontLimits(
    max_body_bytes=1024, read_timeout_seconds=0.5, idle_timeout_seconds=1, workers=2, waiting_workers=2
)


class Handler:
    """Answers 200 with the event's method, path and body size; blocks while `hold` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.running = 0
        self.most_running = 0
        self.hold = threading.Event()
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.entered.release()
        if self.hold.is_set():
            self.release.wait(10)
        with self._lock:
            self.running -= 1
        body = {"method": event["httpMethod"], "path": event["path"], "size": len(event["body"] or "")}
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


@pytest.fixture
def handler() -> Handler:
    return Handler()


@pytest.fixture
def front(handler: Handler) -> Iterator[ApiFront]:
    served = ApiFront(handler, limits=LIMITS, waiting_route=chat_is_waiting).start()
    yield served
    handler.release.set()
    served.stop()


def test_a_port_held_before_the_services_start_is_the_one_the_front_answers_on(handler: Handler) -> None:
    # Given a port bound first thing, as `stepwise serve` binds its --port before the store and the engine start
    listener = bound_listener(0)
    port = listener.getsockname()[1]
    # ...which no server started meanwhile can be given
    with socket.socket() as other, pytest.raises(OSError):
        other.bind(("127.0.0.1", port))
    # When the front starts on it
    served = ApiFront(handler, limits=LIMITS, listener=listener).start()
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10)
    finally:
        handler.release.set()
        served.stop()
    # Then it is the front that answers there
    assert (served.port, answer.status_code) == (port, 200)


def exchange(front: ApiFront, raw: bytes) -> bytes:
    """Send raw bytes on a new connection; what came back once the server answered or closed it."""
    with socket.create_connection(("127.0.0.1", front.port), timeout=5) as connection:
        connection.sendall(raw)
        received = b""
        while True:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                raise AssertionError(f"the server neither answered nor closed the connection: {received!r}") from None
            if not chunk:
                return received
            received += chunk
            if b"\r\n\r\n" in received and b"content-length: 0" not in received.lower():
                head, _, rest = received.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    None,
                )
                if length is not None and len(rest) >= length:
                    return received


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def test_a_declared_body_over_the_limit_is_413_before_it_is_read(front: ApiFront, handler: Handler) -> None:
    # Given a request that declares 100 MB and sends none of it
    raw = b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
    # When it is sent
    response = exchange(front, raw)
    # Then it is refused 413 with the API's error shape, and the handler never ran
    assert status_of(response) == 413
    assert json.loads(response.partition(b"\r\n\r\n")[2])["error"]["type"] == "payload_too_large"
    assert handler.calls == 0


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(front: ApiFront, handler: Handler) -> None:
    # Given a chunked body of 2 chunks of 1000 bytes (over the 1024-byte limit)
    chunk = b"3e8\r\n" + b"x" * 1000 + b"\r\n"
    raw = b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 2 + b"0\r\n\r\n"
    # When it is sent
    response = exchange(front, raw)
    # Then it is 413 and the handler never ran
    assert status_of(response) == 413
    assert handler.calls == 0


@pytest.mark.parametrize("length", [b"abc", b"-1", b"1, 2"])
def test_a_malformed_content_length_is_400(front: ApiFront, handler: Handler, length: bytes) -> None:
    # Given a request whose Content-Length is not a number of bytes
    raw = b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n{}"
    # When it is sent
    response = exchange(front, raw)
    # Then the parser answers 400 and the handler never ran
    assert status_of(response) == 400
    assert handler.calls == 0


def test_a_body_shorter_than_declared_is_408_after_the_read_timeout(front: ApiFront, handler: Handler) -> None:
    # Given a request that declares 100 bytes and sends 2
    raw = b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}"
    # When it is sent and the client waits
    response = exchange(front, raw)
    # Then the front answers 408 and the handler never ran
    assert status_of(response) == 408
    assert handler.calls == 0


def test_a_connection_that_sends_no_request_is_closed_after_the_read_timeout(front: ApiFront) -> None:
    # Given a connection that sends half a request line and nothing more
    # When the client waits
    response = exchange(front, b"GET /v1/mod")
    # Then the server closed it without an answer
    assert response == b""


def test_two_requests_share_one_kept_alive_connection(front: ApiFront, handler: Handler) -> None:
    # Given one HTTP/1.1 client connection
    with httpx.Client(base_url=front.url) as client:
        # When two requests are sent on it
        first = client.get("/v1/models")
        second = client.get("/v1/models")
    # Then both are answered, over the same connection (the server did not close it)
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.headers.get("connection") != "close"
    assert handler.calls == 2


def test_a_method_no_route_has_is_405_with_allow(front: ApiFront, handler: Handler) -> None:
    # Given a TRACE request
    # When it is sent
    response = httpx.request("TRACE", f"{front.url}/v1/runs")
    # Then it is 405, naming the methods the routes take, and the handler never ran
    assert response.status_code == 405
    assert {"GET", "POST"} <= {method.strip() for method in response.headers["allow"].split(",")}
    assert response.json()["error"]["type"] == "method_not_allowed"
    assert handler.calls == 0


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("POST", "/v1/models", ["GET"]),
        ("GET", "/v1/runs/0123456789abcdef/cancel", ["POST"]),
        # HEAD and OPTIONS too: API Gateway serves neither on these resources
        ("HEAD", "/v1/runs", ["GET", "POST"]),
        ("OPTIONS", "/v1/runs", ["GET", "POST"]),
    ],
)
def test_a_method_a_known_path_does_not_take_is_405_with_that_paths_methods(
    front: ApiFront, handler: Handler, method: str, path: str, allowed: list[str]
) -> None:
    # When a route's path is asked with a method it does not take
    response = httpx.request(method, f"{front.url}{path}")
    # Then it is 405, the Allow header names the path's methods, and the handler never ran
    assert response.status_code == 405
    assert [name.strip() for name in response.headers["allow"].split(",")] == allowed
    assert handler.calls == 0


def test_handlers_run_on_a_bounded_pool(front: ApiFront, handler: Handler) -> None:
    # Given handlers that block until released
    handler.hold.set()
    with ThreadPoolExecutor(6) as pool:
        # When 6 requests arrive at once on a front with 2 workers
        responses = [pool.submit(httpx.get, f"{front.url}/v1/runs", timeout=20) for _ in range(6)]
        for _ in range(2):
            assert handler.entered.acquire(timeout=10)
        handler.release.set()
        statuses = [response.result().status_code for response in responses]
    # Then all are answered, never more than 2 at a time
    assert statuses == [200] * 6
    assert handler.most_running == 2


def test_waiting_requests_never_hold_the_workers_other_routes_need(front: ApiFront, handler: Handler) -> None:
    # Given every slot for waiting requests held by a chat completion that waits
    handler.hold.set()
    chat = f"{front.url}/v1/chat/completions"
    with ThreadPoolExecutor(2) as pool:
        waiting = [pool.submit(httpx.post, chat, json={}, timeout=20) for _ in range(LIMITS.waiting_workers)]
        for _ in range(LIMITS.waiting_workers):
            assert handler.entered.acquire(timeout=10)
        # When one more chat completion and a poll arrive
        refused = httpx.post(chat, json={}, timeout=5)
        handler.hold.clear()
        polled = httpx.get(f"{front.url}/v1/runs", timeout=5)
        handler.release.set()
        answered = [future.result().status_code for future in waiting]
    # Then the extra chat is 503 at once, the poll is answered, and the waiting ones end normally
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert polled.status_code == 200
    assert answered == [200] * LIMITS.waiting_workers


def test_a_stream_route_writes_each_chunk_as_it_is_produced(handler: Handler) -> None:
    # Given a stream route whose second chunk is produced only once the client has read the first
    first_read = threading.Event()

    def events(_: dict[str, Any]) -> HttpResponse:
        def chunks() -> Iterator[bytes]:
            yield b"data: one\n\n"
            first_read.wait(10)
            yield b"data: two\n\n"

        return HttpResponse(200, [("content-type", "text/event-stream")], chunks())

    # When the client reads the stream
    with (
        ApiFront(handler, limits=LIMITS, stream_routes=[StreamRoute(lambda _: True, events)]) as front,
        httpx.stream("GET", f"{front.url}/v1/runs/r/events") as response,
    ):
        pieces = response.iter_raw()
        first = next(pieces)
        first_read.set()
        rest = b"".join(pieces)
    # Then the first event arrived before the second was produced, and both arrived
    assert first == b"data: one\n\n"
    assert rest == b"data: two\n\n"
    assert response.headers["content-type"] == "text/event-stream"
    assert handler.calls == 0


class Follower:
    """A stream route whose body sends one event, then waits with its answer's hangup as a follower polls;
    `ended` says how the body ended ("client gone", "closed") once it has."""

    def __init__(self) -> None:
        self.ended: list[str] = []
        self.done = threading.Event()

    def route(self) -> StreamRoute:
        def answer(_: dict[str, Any]) -> HttpResponse:
            hangup = Hangup()

            def chunks() -> Iterator[bytes]:
                try:
                    yield b"data: one\n\n"
                    while True:
                        hangup.sleep(0.2)
                except ClientGone:
                    self.ended.append("client gone")
                    raise
                except GeneratorExit:
                    self.ended.append("closed")
                    raise
                finally:
                    self.done.set()

            return HttpResponse(200, [("content-type", "text/event-stream")], chunks(), b"data: bye\n\n", hangup)

        return StreamRoute(lambda _: True, answer)


def test_a_stream_whose_client_leaves_stops_at_its_next_wait(handler: Handler) -> None:
    # Given a stream that would wait forever after its first event
    follower = Follower()
    with ApiFront(handler, limits=LIMITS, stream_routes=[follower.route()]) as front:
        # When its client reads the first event and closes the connection
        with socket.create_connection(("127.0.0.1", front.port), timeout=5) as connection:
            connection.sendall(b"GET /v1/runs/r/events HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while b"data: one" not in received:
                received += connection.recv(65536)
        # Then its wait ends within 5 s: the body stopped there, its thread freed
        assert follower.done.wait(5)
    assert follower.ended == ["client gone"]


def test_a_stopping_front_ends_a_stream_with_its_closing_and_frees_its_thread(handler: Handler) -> None:
    # Given a client reading a stream that would wait forever after its first event
    follower = Follower()
    front = ApiFront(handler, limits=LIMITS, stream_routes=[follower.route()]).start()
    with httpx.stream("GET", f"{front.url}/v1/runs/r/events", timeout=10) as response:
        pieces = response.iter_raw()
        assert next(pieces) == b"data: one\n\n"
        # When the front stops
        front.stop()
        rest = b"".join(pieces)
    # Then the stream ended with the route's closing, and the body stopped at its wait
    assert rest == b"data: bye\n\n"
    assert follower.done.wait(5)
    assert follower.ended == ["client gone"]


def test_a_body_trickled_in_is_408_once_the_read_timeout_has_passed_since_the_head(
    front: ApiFront, handler: Handler
) -> None:
    # Given a request declaring 100 bytes of body, then sending one byte every 50 ms (5 s in all)
    sent = 0
    with socket.create_connection(("127.0.0.1", front.port), timeout=10) as connection:
        connection.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        connection.setblocking(False)
        answer = b""
        while sent < 100 and not answer:
            connection.sendall(b"x")
            sent += 1
            time.sleep(0.05)
            with contextlib.suppress(BlockingIOError):
                answer = connection.recv(65536)
    # Then the front answered 408 before the body was whole: the timeout bounds the body, not each byte
    assert status_of(answer) == 408
    assert sent < 100
    assert handler.calls == 0
