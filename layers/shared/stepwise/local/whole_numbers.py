"""Command-line options that take a whole number within bounds, each mistake reported by argparse in one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse `type` reading a whole number from `low` up (to `high` when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if high is None and value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        if high is not None and not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse
