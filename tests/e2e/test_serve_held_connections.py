"""`stepwise serve` against clients that hold what it gives them: streams end with their client, never more
are open than the server allows, and a body trickled in byte by byte holds its connection no longer than
the read timeout.

One server in this process (its threads are this process's threads). The runs followed are stored QUEUED
and never started, so they stay open and a stream of them never ends by itself; streamed chats start runs
of a scripted model that answers at once. Clients are raw sockets: an abandoning client sends its request,
reads what first comes back and closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from stepwise.local.http_front import FrontLimits
from stepwise.local.server import LocalApi
from tests.e2e.conftest import react_answer, scripted_model, serve
from tests.support.abandoned_streams import (
    chat_request,
    follow_request,
    open_run,
    port_of,
    read_once_and_leave,
    status_of,
)

FOLLOWERS = 200
CHATS = 50
SETTLE_SECONDS = 5.0
# Small pools, filled by a first round of streams, so the thread count they settle at is the baseline; stream
# limits small enough to fill in a test. The read timeout runs from a connection's opening to its whole head:
# at 1 s, a busy machine once let a second pass between the server accepting one of 250 connections and this
# process's client writing its head, and the server rightly closed it unanswered. 4 s is past any such wait
# and still well short of the 10 s a trickled body takes.
LIMITS = FrontLimits(workers=2, waiting_workers=2, max_streams=6, max_streams_per_owner=3, read_timeout_seconds=4.0)
CONFIG: dict[str, Any] = {
    "models": {"answers": scripted_model(react_answer("Hi."))},
    "profiles": {"quick": {"model": "answers", "strategy": "react", "protocol": "react_json"}},
    "default_profile": "quick",
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(CONFIG, tmp_path_factory.mktemp("streams"), front_limits=LIMITS, max_concurrent_executions=2) as served:
        yield served


def body_of(answer: bytes) -> Any:
    return json.loads(answer.partition(b"\r\n\r\n")[2])


def rest_of_answer(connection: socket.socket, answer: bytes) -> bytes:
    """`answer` read on to the end of its body (its `content-length`), or until the server closes: on a busy
    machine the head and the body of an answer can arrive apart."""
    connection.settimeout(10)
    with contextlib.suppress(OSError):
        while not whole(answer) and (chunk := connection.recv(65536)):
            answer += chunk
    return answer


def whole(answer: bytes) -> bool:
    """True once `answer` holds its head and as many body bytes as the head's `content-length` says."""
    head, separator, body = answer.partition(b"\r\n\r\n")
    lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    return bool(separator) and bool(lengths) and len(body) >= int(lengths[0])


async def abandon_all(port: int, requests: list[bytes]) -> tuple[list[bytes], int]:
    """Every request at once, each read once and abandoned; meanwhile `GET /v1/models` (its status)."""

    async def models() -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nx-api-key: reader\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 60)
        writer.close()
        return status_of(answer)

    listed = asyncio.ensure_future(models())
    answers = await asyncio.gather(*(read_once_and_leave(port, each) for each in requests))
    return list(answers), await listed


# Threads other tests of this worker's process leave behind for a while: a loopback server's request
# handler, asyncio's child watchers of a subprocess. They are not the server's to give back.
FOREIGN_THREADS = ("process_request_thread", "asyncio-waitpid")


def server_thread_count() -> int:
    """The threads of this process but those `FOREIGN_THREADS` name."""
    return sum(1 for thread in threading.enumerate() if not any(name in thread.name for name in FOREIGN_THREADS))


def settled_thread_count(within: float = 10.0) -> int:
    """The thread count once it has not changed for a second (waiting at most `within`)."""
    count, since, deadline = server_thread_count(), time.monotonic(), time.monotonic() + within
    while time.monotonic() < deadline and time.monotonic() - since < 1.0:
        time.sleep(0.05)
        if server_thread_count() != count:
            count, since = server_thread_count(), time.monotonic()
    return count


def within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def held_stream(stack: ExitStack, api: LocalApi, request: bytes) -> tuple[socket.socket, bytes]:
    """A stream opened and kept open (closed with `stack`), with the head of its answer."""
    connection = stack.enter_context(socket.create_connection(("127.0.0.1", port_of(api)), timeout=30))
    connection.sendall(request)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        assert chunk, "the server closed the stream"
        received += chunk
    if status_of(received) != 200:  # a refusal is whole: its JSON body follows its head
        length = int(
            next(line for line in received.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1]
        )
        while len(received.partition(b"\r\n\r\n")[2]) < length:
            received += connection.recv(65536)
    return connection, received


def test_abandoned_followers_and_streamed_chats_give_their_threads_back(api: LocalApi) -> None:
    # Given a run that stays open, and the server's pools filled by a first round of abandoned streams,
    # after which its thread count is the baseline
    run_id = open_run(api, "alice", "quick")
    follows = [follow_request(run_id, "alice") for _ in range(FOLLOWERS)]
    chats = [chat_request(f"chatter-{index % 5}", "quick") for index in range(CHATS)]
    asyncio.run(abandon_all(port_of(api), follows[:10] + chats[:5]))
    baseline = settled_thread_count()
    # When 200 followers of it and 50 streamed chats each read their answer's head and leave
    answers, models_status = asyncio.run(abandon_all(port_of(api), follows + chats))
    # Then each was streamed or refused 503 past the limits, the models list was served meanwhile,
    # and within 5 s the server is back to its baseline of threads
    statuses = [status_of(answer) for answer in answers]
    assert set(statuses) <= {200, 503} and 200 in statuses
    assert models_status == 200
    assert within(SETTLE_SECONDS, lambda: server_thread_count() <= baseline), (
        f"{server_thread_count()} threads, {baseline} before: "
        + ", ".join(sorted(thread.name for thread in threading.enumerate()))
    )


def test_a_caller_past_its_streams_is_refused_503_and_another_caller_is_not(api: LocalApi) -> None:
    # Given bob following his open run with as many streams as one caller may have
    bobs, carols = open_run(api, "bob", "quick"), open_run(api, "carol", "quick")
    with ExitStack() as stack:
        for _ in range(LIMITS.max_streams_per_owner):
            _, head = held_stream(stack, api, follow_request(bobs, "bob"))
            assert status_of(head) == 200
        # When bob opens one more, and asks for a streamed chat; and carol follows her run
        _, refused = held_stream(stack, api, follow_request(bobs, "bob"))
        _, chat_refused = held_stream(stack, api, chat_request("bob", "quick"))
        _, carol = held_stream(stack, api, follow_request(carols, "carol"))
        runs = httpx.get(f"{api.url}/v1/runs", headers={"x-api-key": "bob"}).json()["runs"]
    # Then bob's extra stream and his chat are refused 503 with Retry-After and the API's error body naming
    # the limit, his chat started no run, and carol's stream is served
    for answer in (refused, chat_refused):
        assert status_of(answer) == 503
        assert b"\r\nretry-after: 1\r\n" in answer.lower()
        error = body_of(answer)["error"]
        assert (error["type"], error["details"]) == ("unavailable", {"limit": "streams_per_caller", "maximum": 3})
    assert [run["run_id"] for run in runs] == [bobs]
    assert status_of(carol) == 200


def test_past_the_servers_streams_every_caller_is_refused_until_one_leaves(api: LocalApi) -> None:
    # Given the server's streams all open, held by two callers
    owners = [f"holder-{index}" for index in range(2)]
    runs = {owner: open_run(api, owner, "quick") for owner in owners}
    with ExitStack() as stack:
        held = [
            held_stream(stack, api, follow_request(runs[owners[index % 2]], owners[index % 2]))
            for index in range(LIMITS.max_streams)
        ]
        assert [status_of(head) for _, head in held] == [200] * LIMITS.max_streams
        newcomer = open_run(api, "dave", "quick")
        # When a third caller follows a run of his, before and after one of the streams is closed
        _, refused = held_stream(stack, api, follow_request(newcomer, "dave"))
        held[0][0].close()

        def admitted() -> bool:
            with ExitStack() as attempt:
                return status_of(held_stream(attempt, api, follow_request(newcomer, "dave"))[1]) == 200

        served_after = within(SETTLE_SECONDS, admitted)
    # Then he is refused 503 naming the server's limit, then served once a slot was given back
    assert status_of(refused) == 503
    assert body_of(refused)["error"]["details"] == {"limit": "streams", "maximum": LIMITS.max_streams}
    assert served_after


def test_a_body_trickled_in_byte_by_byte_is_408_once_the_read_timeout_has_passed(api: LocalApi) -> None:
    # Given a run posted with a 200-byte body sent one byte every 50 ms (10 s in all)
    body = json.dumps({"input": "x" * 180}).encode()
    head = "POST /v1/runs HTTP/1.1\r\nHost: x\r\nx-api-key: slow\r\nContent-Type: application/json\r\n"
    sent, answer = 0, b""
    with socket.create_connection(("127.0.0.1", port_of(api)), timeout=30) as connection:
        connection.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode())
        connection.setblocking(False)
        while sent < len(body) and not answer:
            try:
                connection.sendall(body[sent : sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed between two bytes: its answer is read below
            sent += 1
            time.sleep(0.05)
            with contextlib.suppress(BlockingIOError):
                answer = connection.recv(65536)
        answer = rest_of_answer(connection, answer)
    # Then the server answered 408 in the API's error shape long before the body was whole, and stored nothing
    assert status_of(answer) == 408
    assert body_of(answer)["error"]["type"] == "request_timeout"
    assert sent < len(body)
    assert httpx.get(f"{api.url}/v1/runs", headers={"x-api-key": "slow"}).json()["runs"] == []
