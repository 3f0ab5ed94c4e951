"""Token counts as stored and passed between steps: read back as whole numbers in range, never refused.

A count one step wrote is read by every later one (the payload's spend, the trace's steps, META's usage),
and by ExecutionEnded and the API. Were a model to refuse one (a negative count a provider sent before it
was checked, say), each of those would fail in turn and the run would stay open for ever. So a stored count
is taken for what it can be: a whole number (a float rounded, a numeric string read), at least 0, at most
`MAX_STORED_COUNT`; anything that is no number at all reads as 0. Counts from providers are checked where
they arrive (`stepwise.protocols.usage_fields`); this is the defence in depth behind that check.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Annotated, Any

from pydantic import BeforeValidator

# Far beyond what any run spends, well within a JSON number's exact integers (2^53) and DynamoDB's 38 digits.
MAX_STORED_COUNT = 10**15


def stored_count(value: Any) -> int:
    """`value` as a count in [0, MAX_STORED_COUNT]; 0 for anything that is not a number."""
    if type(value) is int:  # what almost every count is (a run validates a few hundred): no ABC check
        return min(max(value, 0), MAX_STORED_COUNT)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return 0
    if isinstance(value, bool) or not isinstance(value, Real):
        return 0
    if not isinstance(value, int):
        value = float(value)
        if not math.isfinite(value):
            return 0
    return int(min(max(round(value), 0), MAX_STORED_COUNT))


def _optional_count(value: Any) -> int | None:
    return None if value is None else stored_count(value)


def stored_cost(value: Any) -> float | None:
    """A stored cost in US dollars: a finite number of at least 0, else none (not known)."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


Count = Annotated[int, BeforeValidator(stored_count)]
OptionalCount = Annotated[int | None, BeforeValidator(_optional_count)]
Cost = Annotated[float | None, BeforeValidator(stored_cost)]


def parts_within_totals(
    input_tokens: int, output_tokens: int, cache_read: int, cache_write: int, reasoning: int
) -> tuple[int, int, int]:
    """Cache reads and writes, and reasoning tokens, cut to the totals they are part of: (cache read, cache
    write, reasoning), the cache reads kept first."""
    cache_read = min(cache_read, input_tokens)
    return cache_read, min(cache_write, input_tokens - cache_read), min(reasoning, output_tokens)
