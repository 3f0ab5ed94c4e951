"""Who is told which run a request started: a hook for whoever invoked the API on this thread.

A chat completion starts a run and waits for it; when the waiting is cut short by the caller of the API
function itself (`stepwise serve` stopping), that caller can still name the run in its answer. It sets
an observer around its invocation; the chat logic reports the run it queued. On Lambda nobody observes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_OBSERVER: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "stepwise_started_run_observer", default=None
)


@contextmanager
def observing_started_runs(observer: Callable[[str], None]) -> Iterator[None]:
    """Call `observer(run_id)` for each run a request handled on this thread (and context) starts."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


def run_started(run_id: str) -> None:
    """Tell the observer, if any, that the request being handled started `run_id`."""
    observer = _OBSERVER.get()
    if observer is not None:
        observer(run_id)
