"""One invocation's metrics, kept apart from those of the invocations running beside it.

Powertools' `Metrics` keeps a process's metrics in one set, flushed and cleared at the end of each invocation:
right on Lambda, where a process runs one invocation at a time. The local engine runs many on threads of one
process (`stepwise serve`, `run`, `eval`), where one invocation's flush printed (or its clear dropped) another's
metrics under its dimensions, and raised "dictionary changed size during iteration" when another added a
metric meanwhile. Inside `invocation_metrics` (the local runtime opens one per invocation), the service's
metrics (`stepwise.telemetry.scoped_emf`) go to a provider of that invocation's own; threads started with its
context share it. Outside any, they go to the process's provider, as on Lambda.

Kept free of Powertools: the local runtime imports it before any handler is loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class InvocationScope:
    """The metrics provider of one invocation, made when its first metric comes (by whoever knows how)."""

    provider: Any = None
    _making: threading.Lock = field(default_factory=threading.Lock)

    def provider_or(self, make: Callable[[], Any]) -> Any:
        """This invocation's provider, made with `make` the first time: threads of one invocation share it."""
        if self.provider is None:
            with self._making:
                if self.provider is None:
                    self.provider = make()
        return self.provider


_INVOCATION: ContextVar[InvocationScope | None] = ContextVar("stepwise_invocation_metrics", default=None)


@contextmanager
def invocation_metrics() -> Iterator[InvocationScope]:
    """Metrics added within belong to one invocation, and are dropped at its end (a Lambda flush clears them)."""
    scope = InvocationScope()
    token = _INVOCATION.set(scope)
    try:
        yield scope
    finally:
        _INVOCATION.reset(token)


def current_invocation() -> InvocationScope | None:
    """The scope of the invocation in scope, or None outside any."""
    return _INVOCATION.get()
