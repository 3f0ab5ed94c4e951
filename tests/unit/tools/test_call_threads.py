"""Tool calls run on threads kept between calls: a thread is started per call in flight, not per call."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from stepwise.tools import ToolInvoker, ToolRegistry, tool
from stepwise.tools.call_threads import CallThreads
from tests.unit.tools.config_builders import call


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event that lets a stuck call finish once the test is over."""
    event = threading.Event()
    yield event
    event.set()


def test_calls_one_after_another_run_on_one_thread() -> None:
    # Given a tool that says which thread it ran on, and the invoker's threads as they are now
    threads_seen: set[int] = set()

    @tool
    def where() -> str:
        """Name the thread the call runs on."""
        threads_seen.add(threading.get_ident())
        return "here"

    invoker = ToolInvoker(ToolRegistry([where]))

    # When it is called five times, one call after another
    observations = [invoker.invoke(call("where")) for _ in range(5)]

    # Then every call answered, all on one thread, not the caller's
    assert [observation.content for observation in observations] == ["here"] * 5
    assert len(threads_seen) == 1
    assert threading.get_ident() not in threads_seen


def test_a_call_left_running_keeps_its_thread_and_the_next_call_gets_a_new_one(release: threading.Event) -> None:
    # Given threads of which one runs a call that has not returned, each call noting the thread it ran on
    ran_on: dict[str, threading.Thread] = {}
    running = threading.Event()

    def wait_for_the_test_end() -> None:
        ran_on["stuck"] = threading.current_thread()
        running.set()
        release.wait()

    threads = CallThreads(name="test-stuck-call", idle_seconds=0.5)
    stuck = threads.start(wait_for_the_test_end)
    assert running.wait(30)

    # When another call comes, then a third after it
    threads.start(lambda: ran_on.update(second=threading.current_thread())).wait(30)
    threads.start(lambda: ran_on.update(third=threading.current_thread())).wait(30)

    # Then the stuck call is still running, and the other two ran one after the other on a second thread
    assert not stuck.is_set()
    assert ran_on["second"] is ran_on["third"]
    assert ran_on["second"] is not ran_on["stuck"]


def test_an_idle_thread_leaves_and_a_later_call_starts_another() -> None:
    # Given threads that leave after 10 ms without a call, one of which has run a call
    ran_on: list[threading.Thread] = []
    threads = CallThreads(name="test-idle-call", idle_seconds=0.01)
    threads.start(lambda: ran_on.append(threading.current_thread())).wait(30)

    # When that thread has left (within 30 s), and a call comes
    ran_on[0].join(30)
    ran = threads.start(lambda: ran_on.append(threading.current_thread())).wait(30)

    # Then it runs, on a second thread
    assert ran
    assert not ran_on[0].is_alive()
    assert ran_on[1] is not ran_on[0]
