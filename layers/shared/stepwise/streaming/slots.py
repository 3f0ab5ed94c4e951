"""How many streams a server follows at once, in all and per caller: each open stream holds a thread that
reads the store every 0.2 s, so their number is bounded like the server's other workers.

A stream route claims a slot before its first read of the store (and before a streamed chat starts its
run), and the body it answers with holds the slot until it ends or is closed (`HeldStream`); a claim
refused is answered 503 with `Retry-After`, and nothing was read or started.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

from stepwise.streaming.answers import HttpResponse, error_answer

_POLL_INSTEAD = "or poll GET /v1/runs/{run_id}/events as JSON"


class StreamSlots:
    """At most `total` streams open at once, and at most `per_owner` of one caller."""

    def __init__(self, *, total: int, per_owner: int) -> None:
        self.total = total
        self.per_owner = per_owner
        self._open: Counter[str] = Counter()
        self._lock = threading.Lock()

    def open_streams(self) -> int:
        """How many streams hold a slot now."""
        with self._lock:
            return sum(self._open.values())

    def claim(self, owner: str) -> Callable[[], None] | HttpResponse:
        """A slot for one stream of `owner`: the function that gives it back (once; later calls do nothing),
        or the 503 answer when the server's or the caller's streams are all open."""
        with self._lock:
            if sum(self._open.values()) >= self.total:
                message = f"all {self.total} streams this server follows at once are open; retry later, {_POLL_INSTEAD}"
                return error_answer(
                    503, "unavailable", message, details={"limit": "streams", "maximum": self.total}, retry_after="1"
                )
            if self._open[owner] >= self.per_owner:
                message = (
                    f"this caller already has {self.per_owner} streams open, the most one caller may; "
                    f"close one, retry later, {_POLL_INSTEAD}"
                )
                details = {"limit": "streams_per_caller", "maximum": self.per_owner}
                return error_answer(503, "unavailable", message, details=details, retry_after="1")
            self._open[owner] += 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                self._open[owner] -= 1
                if not self._open[owner]:
                    del self._open[owner]

        return release


class HeldStream:
    """A streamed body that gives its slot back when it ends, fails or is closed (even before its first chunk)."""

    def __init__(self, chunks: Iterator[bytes], release: Callable[[], None]) -> None:
        self._chunks = chunks
        self._release = release

    def __iter__(self) -> HeldStream:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._chunks)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the body (its `finally` runs) and give the slot back."""
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._release()
