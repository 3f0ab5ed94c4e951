"""Every regular expression and loop that reads caller, model or tool text, timed on its worst inputs.

`CASES` (`bench/adversarial_cases.py`) lists each function that runs a regular expression (or a
hand-written scan) over text that came from outside, with the inputs that are worst for it: unterminated
strings full of escapes, long runs of the characters a pattern repeats, nested or unclosed brackets and
tags, many near-matches of a secret. Each input is a pattern repeated to 10 KB, 100 KB and 1 MB. A linear
function costs about 10 times more at 1 MB than at 100 KB; one that rescans (a regex backtracking from
every start) costs about 100 times more. `tests/unit/test_linear_time.py` fails above `MAX_RATIO`;
`make bench` prints the table.

Between 100 KB and 1 MB a text (and the regex engine's state over it) outgrows the CPU's caches, which
alone can make a fast linear function's 1 MB cost 20-40 times its 100 KB one on a busy machine. The
allocator adds its own step there (a string past its threshold is mapped afresh). So a case over
`MAX_RATIO` passes when its 1 MB costs at most `MAX_SCANS` plain scans of the text, or when, measured at
4 MB, four times the text costs it at most `MAX_GROWTH_4X` times more (a linear function 4, a quadratic
one 16). The garbage collector is off while a case runs, as `timeit` has it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.adversarial_cases import CASES, Case

SIZES = (10_000, 100_000, 1_000_000)
# A linear function's 1 MB costs ~10x its 100 KB (a little more once the text outgrows the CPU caches);
# a quadratic one's ~100x. The limit sits between, well clear of both.
MAX_RATIO = 15.0
# Above the caches and the allocator's thresholds, 4 times the text costs a linear function 4 times
# as much and a quadratic one 16 times.
LARGEST_SIZE = 4_000_000
MAX_GROWTH_4X = 8.0
# A 1 MB cost within this many plain scans of the text (`str.find`, at memory speed) is a few passes over
# it at most, whatever its ratio: a function of microseconds, whose ratio is the allocator's and the
# scheduler's. A quadratic function on 1 MB costs millions of scans.
MAX_SCANS = 1000.0
# From 10 KB to 100 KB (both within the caches) a linear function grows about 10 times, a quadratic one 100.
MAX_EARLY_RATIO = 50.0
REPEATS = 3
_SLOW_SECONDS = 0.05
_TOO_SLOW_TO_REPEAT = 1.0
# A run shorter than this is repeated in a batch and averaged: a timer's resolution and a scheduler's
# jitter would otherwise be most of what is measured.
_MIN_BATCH_SECONDS = 0.005


def seconds(case: Case, size: int, repeats: int = REPEATS) -> float:
    """The best of `repeats` runs of the case at `size` characters (of batches, for a case that fast)."""
    return _best(case.run, case.build(size), repeats)


def _best(run: Callable[[str], object], text: str, repeats: int) -> float:
    """The best CPU time of `run` on `text`, with the cyclic garbage collector off while it runs (as `timeit`
    does): its full collections cost more the more objects are alive, which is the test's, not the case's.
    Nor is a collection forced first: in a test process with much alive, each would cost seconds.

    The calling thread's CPU time, not the wall clock: other processes on a busy machine (CI's other test
    workers, anything else running) stretch the wall time of one size and not the other, and made a
    linear case read as quadratic; they do not add to this thread's CPU time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        run(text)
        once = time.thread_time() - started
        batch = max(1, int(_MIN_BATCH_SECONDS / once)) if once > 0 else 1
        best = once
        # a run this slow is far above any noise; one more would only make a failing test slower
        for _ in range(
            0 if once > _TOO_SLOW_TO_REPEAT else min(repeats, 2) - 1 if once > _SLOW_SECONDS else repeats - 1
        ):
            started = time.thread_time()
            for _ in range(batch):
                run(text)
            best = min(best, (time.thread_time() - started) / batch)
    finally:
        if collecting:
            gc.enable()
    return best


def _scan(text: str) -> int:
    return text.find("\0")


@dataclass(frozen=True)
class Growth:
    """How a case's cost grew from 100 KB to 1 MB; its 1 MB cost in plain scans of the text; and, when those
    were over their limits, how it grew from 1 MB to 4 MB."""

    ratio: float
    scans: float
    growth_4x: float | None = None
    # True when the growth from 10 KB to 100 KB was already quadratic: measuring again will not change it
    conclusive: bool = False

    @property
    def linear(self) -> bool:
        """True when the growth is that of a linear function."""
        return (
            self.ratio <= MAX_RATIO
            or self.scans <= MAX_SCANS
            or (self.growth_4x is not None and self.growth_4x <= MAX_GROWTH_4X)
        )


def growth(case: Case) -> Growth:
    """The case's 1 MB / 100 KB ratio, confirmed when it is over the limit. A case slower than
    `_SLOW_SECONDS` at 100 KB is run fewer times (its figures are far above the noise). A case that grows
    quadratically already from 10 KB to 100 KB (`MAX_EARLY_RATIO`) is not run at 1 MB, where it would take
    hours: its growth is reported as measured there."""
    small = _best(case.run, case.build(SIZES[0]), REPEATS)
    medium = _best(case.run, case.build(SIZES[1]), REPEATS)
    if medium / small > MAX_EARLY_RATIO:
        return Growth(medium / small, float("inf"), conclusive=True)
    large_text = case.build(SIZES[2])
    # One run at 1 MB (and 4 MB): it is 80% of a case's time, 100 times the 10 KB run and far above the
    # timer's noise, and a case that reads super-linear once is measured afresh (the test's MEASUREMENTS)
    large = _best(case.run, large_text, 1)
    measured = Growth(large / medium, large / _best(_scan, large_text, REPEATS))
    if measured.linear:
        return measured
    largest = _best(case.run, case.build(LARGEST_SIZE), 1)
    return Growth(measured.ratio, measured.scans, largest / large)


def main() -> None:
    """Print every case's time at each size, and its 1 MB / 100 KB ratio."""
    print(f"Time on adversarial inputs (best of {REPEATS}); linear is ~10x from 100 KB to 1 MB")
    print("| function | input (repeated) | 10 KB ms | 100 KB ms | 1 MB ms | 1 MB / 100 KB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for case in CASES:
        small, medium, large = (seconds(case, size) for size in SIZES)
        print(
            f"| {case.function} | {case.input} | {small * 1000:.2f} | {medium * 1000:.1f} | {large * 1000:.0f} "
            f"| {large / medium:.1f} |"
        )


if __name__ == "__main__":
    main()
