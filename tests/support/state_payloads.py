"""Sizes of the state machine's payloads, as the tests that hold them constant measure them."""

from __future__ import annotations

import json
from typing import Any


def size_less_counters(payload: dict[str, Any]) -> int:
    """The payload's JSON size less the characters of its counters: its iteration, the run's spend, and the
    numbers and flags of its context (request sizes, the summary's iterations)."""
    counters = [payload["iteration"], *payload["run"]["spend"].values(), *payload["context"].values()]
    return len(json.dumps(payload)) - sum(len(json.dumps(value)) for value in counters)
