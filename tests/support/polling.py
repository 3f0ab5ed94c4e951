"""Waiting for something another thread or process does, as a client polls for it: bounded, and failing with what
was last seen, never returning it as if the wait had succeeded (a caller's assertion on it then says nothing of
whether the run had ended, or was still on its way).

The bound is generous: a CI machine runs 4 test workers on 2 cores, 3 to 5 times slower than a quiet one, and a wait
that crosses processes (a server, its engine, DynamoDB Local) is the first to stretch. Reaching it is a failure, so
it costs nothing while everything works.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

# For anything that crosses threads or processes (a run's end, a server's start): minutes, never seconds.
CROSS_PROCESS_SECONDS = 120.0
INTERVAL_SECONDS = 0.05

Seen = TypeVar("Seen")


def wait_for(
    read: Callable[[], Seen],
    until: Callable[[Seen], bool],
    *,
    what: str,
    within: float = CROSS_PROCESS_SECONDS,
    shown: Callable[[Seen], str] = repr,
    interval: float = INTERVAL_SECONDS,
) -> Seen:
    """`read()` once `until` holds for it; after `within` s, an AssertionError naming `what` and the last value."""
    deadline = time.monotonic() + within
    while True:
        value = read()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {within:.0f} s; last seen: {shown(value)}")
        time.sleep(interval)


def run_seen(body: Any) -> str:
    """A run's view (`GET /v1/runs/{id}`) as a failure message shows it: its status, and how it ended or what waits."""
    if not isinstance(body, dict) or "status" not in body:
        return repr(body)[:500]
    parts = [str(body["status"])]
    if body.get("stop_reason"):
        parts.append(f"stop_reason {body['stop_reason']}")
    if body.get("error"):
        parts.append(f"error {body['error']}")
    if body.get("pending_approvals"):
        parts.append(f"waiting calls {[each.get('call_id') for each in body['pending_approvals']]}")
    if "iterations" in body:
        parts.append(f"{body['iterations']} iteration(s)")
    return ", ".join(parts)
