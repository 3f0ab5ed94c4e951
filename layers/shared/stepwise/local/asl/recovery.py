"""Retry and Catch: which entry matches an error, and how long to wait before the next attempt."""

from __future__ import annotations

import random
from collections.abc import Sequence

from stepwise.local.asl.definition import Catcher, Retrier

# Step Functions never retries or catches these, even with States.ALL.
_TERMINAL_ERRORS = {"States.Runtime", "States.DataLimitExceeded"}
_HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"


def error_matches(error_equals: Sequence[str], error: str | None) -> bool:
    """Whether an `ErrorEquals` list covers `error`.

    `States.ALL` covers every error but the terminal ones; `States.TaskFailed` covers every error but
    those and the timeouts; `States.Timeout` also covers `States.HeartbeatTimeout` (a task that stopped
    sending heartbeats timed out, as the service reports it).
    """
    if error in _TERMINAL_ERRORS:
        return False
    if error is not None and error in error_equals:
        return True
    if "States.ALL" in error_equals:
        return True
    if error == _HEARTBEAT_TIMEOUT:
        return "States.Timeout" in error_equals
    return "States.TaskFailed" in error_equals and error != "States.Timeout"


def find_retrier(retriers: Sequence[Retrier], error: str | None) -> int | None:
    """The index of the first retrier that matches, whether or not it has attempts left (as on AWS)."""
    return next((index for index, entry in enumerate(retriers) if error_matches(entry.error_equals, error)), None)


def find_catcher(catchers: Sequence[Catcher], error: str | None) -> Catcher | None:
    """The first catcher that matches."""
    return next((entry for entry in catchers if error_matches(entry.error_equals, error)), None)


def backoff_seconds(retrier: Retrier, retries_so_far: int, rng: random.Random) -> float:
    """The wait before retry number `retries_so_far + 1`: IntervalSeconds x BackoffRate^n, capped by
    MaxDelaySeconds; with FULL jitter a uniform draw between 0 and that."""
    delay = retrier.interval_seconds * retrier.backoff_rate**retries_so_far
    if retrier.max_delay_seconds is not None:
        delay = min(delay, retrier.max_delay_seconds)
    return rng.uniform(0, delay) if retrier.jitter_strategy == "FULL" else float(delay)
