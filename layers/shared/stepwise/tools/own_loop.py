"""Async client SDKs (MCP's, A2A's) driven from a tool's synchronous `call`: each operation in an event loop of
its own.

A loop per operation has nothing to keep alive across a frozen Lambda container, and parallel tool calls
(each in its own invoker thread) never share one. A thread that already runs an event loop (a notebook, an
async caller embedding Stepwise) cannot start another: there the operation's loop runs on a thread of its
own, and the call waits for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

Result = TypeVar("Result")


def run_in_own_loop(run: Callable[[], Awaitable[Result]], *, thread_name: str) -> Result:
    """`run` in a new event loop: on this thread, or on one named `thread_name` when this thread runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(run)
    outcome: list[Result] = []
    failure: list[BaseException] = []

    def in_thread() -> None:
        try:
            outcome.append(anyio.run(run))
        except BaseException as exc:
            failure.append(exc)

    # in the caller's context variables, as on this thread: what the operation records joins the caller's trace
    thread = threading.Thread(target=contextvars.copy_context().run, args=(in_thread,), name=thread_name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def innermost(failure: BaseException) -> BaseException:
    """The first real failure inside (possibly nested) exception groups, which anyio wraps task failures in."""
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    return failure
