"""The threads tool calls run on, each kept for the next call once its call has returned.

`ToolInvoker` runs every call on a thread other than its caller's so that a call which never returns can
be left behind when the call cap passes; the thread is a daemon, so that such a call does not keep the
process alive. Starting a thread for every call cost more CPU than the rest of the invoker's work on it
(the profile of a `stepwise serve` burst, docs/performance.md), so a thread whose call has returned waits
for the next one, and leaves after `IDLE_SECONDS` without one. A call left behind keeps its thread: the
next call finds no idle thread and starts one.

Hand-written because `concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits,
which a call that never returns would block, and queues calls beyond its size instead of starting them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

IDLE_SECONDS = 60.0


class CallThreads:
    """Daemon threads that run one call at a time, reused once their call has returned."""

    def __init__(self, *, name: str = "tool-call", idle_seconds: float = IDLE_SECONDS) -> None:
        self._name, self._idle_seconds = name, idle_seconds
        self._idle: list[_CallThread] = []
        self._lock = threading.Lock()

    def start(self, call: Callable[[], None]) -> threading.Event:
        """Run `call` on an idle thread, or on a new one when none is idle; the event is set once it has
        returned (or raised, which `call` should not) and its thread is idle again."""
        with self._lock:
            thread = self._idle.pop() if self._idle else None
        if thread is None:
            thread = _CallThread(self)
            threading.Thread(target=thread.serve, name=self._name, daemon=True).start()
        done = threading.Event()
        thread.calls.put((call, done))
        return done

    def _returned(self, thread: _CallThread) -> None:
        with self._lock:
            self._idle.append(thread)

    def _retire(self, thread: _CallThread) -> bool:
        """Whether an idle `thread` may leave: not when a call has just been handed to it."""
        with self._lock:
            if thread in self._idle:
                self._idle.remove(thread)
                return True
            return False


class _CallThread:
    def __init__(self, threads: CallThreads) -> None:
        self._threads = threads
        self.calls: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()

    def serve(self) -> None:
        while True:
            try:
                call, done = self.calls.get(timeout=self._threads._idle_seconds)
            except queue.Empty:
                if self._threads._retire(self):
                    return
                continue
            try:
                call()
            except BaseException:
                done.set()  # the thread ends with what `call` raised, and is never handed another call
                raise
            # idle again before the caller hears of it: its next call finds this thread
            self._threads._returned(self)
            done.set()
