"""One invocation's metrics, kept apart from those of the invocations running beside it.

Powertools keeps a process's metrics in one set, flushed and cleared at the end of each invocation: right on
Lambda, where a process runs one invocation at a time. The local engine runs many on threads of one process
(`stepwise serve`, `run`, `eval`), where one invocation's flush printed (or its clear dropped) another's
metrics under its dimensions, and raised "dictionary changed size during iteration" when another added a
metric meanwhile. Inside `invocation_metrics` (the local runtime opens one per invocation), the service's
metrics (`stepwise.telemetry.observability`) go to that invocation's own set; threads started with its
context share it. Outside any, they go to the process's set, as on Lambda.

Kept free of Powertools: the local runtime imports it before any handler is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MetricSets:
    """What Powertools' EMF provider keeps between a metric's addition and the flush: metrics, dimensions (the
    set and the added sets), metadata and the timestamp."""

    metric_set: dict[str, Any] = field(default_factory=dict)
    dimension_set: dict[str, str] = field(default_factory=dict)
    dimension_sets: list[dict[str, str]] = field(default_factory=list)
    metadata_set: dict[str, Any] = field(default_factory=dict)
    timestamp: int | None = None


_INVOCATION: ContextVar[MetricSets | None] = ContextVar("stepwise_invocation_metrics", default=None)


@contextmanager
def invocation_metrics() -> Iterator[MetricSets]:
    """Metrics added within belong to one invocation, and are dropped at its end (a Lambda flush clears them)."""
    sets = MetricSets()
    token = _INVOCATION.set(sets)
    try:
        yield sets
    finally:
        _INVOCATION.reset(token)


def current_invocation() -> MetricSets | None:
    """The sets of the invocation in scope, or None outside any."""
    return _INVOCATION.get()
