"""The one JSON loader for text that comes from outside: bounded in size and nesting depth.

Python's `json` parser recurses once per nesting level, so a document nested a few thousand deep raises
`RecursionError` (not `ValueError`) and one of many megabytes costs memory before anything looks at
it. Every JSON the service parses from a caller, a model or a tool goes through `load_json`, which
measures both before parsing and raises `JsonLimitExceeded` naming the limit, so each boundary can
answer with a 400, a corrective observation or a config error instead of a 500.

The depth is measured by one left-to-right pass over the string literals and brackets (no recursion, no
backtracking), so even a 10 MB document of brackets, or of an unterminated string full of escapes, costs
one linear scan.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64
MAX_JSON_BYTES = 4 * 1024 * 1024

# One token: a string literal (escapes included; brackets inside one nest nothing) or a bracket. A string
# runs to its closing quote or, unterminated, to the end of the text, and every repetition is possessive:
# the match never gives characters back, and a string that does not close still matches (to the end), so
# no later quote inside it is tried as a new start. A pattern that failed on an unterminated string (the
# previous one, `"[^"\\]*(?:\\.[^"\\]*)*"`) retried from every quote inside it: quadratic time on `\"` * n.
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


class JsonLimitExceeded(ValueError):
    """A JSON document is over a limit; `limit` names it (`depth` or `size`), the message says by how much."""

    def __init__(self, message: str, *, limit: str, maximum: int, actual: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.maximum = maximum
        self.actual = actual


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in a JSON text (0 for a scalar); malformed text is measured as is."""
    depth = deepest = 0
    for token in _TOKEN.findall(text):
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def value_depth(value: Any) -> int:
    """How deep lists and dicts nest in an already parsed value (from YAML, say); iterative, never recursing."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def check_depth(depth: int, *, max_depth: int = MAX_JSON_DEPTH, what: str = "the JSON document") -> None:
    """Raise `JsonLimitExceeded` when `depth` is over `max_depth`."""
    if depth > max_depth:
        raise JsonLimitExceeded(
            f"{what} nests {depth} levels deep; the limit is {max_depth}",
            limit="depth",
            maximum=max_depth,
            actual=depth,
        )


def load_json(
    text: str | bytes,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
    what: str = "the JSON document",
) -> Any:
    """Parse strict JSON (no NaN or Infinity) within the limits.

    Raises `JsonLimitExceeded` (a `ValueError`) for a document over `max_bytes` or nested deeper than
    `max_depth`, and `ValueError` for anything that is not JSON; never `RecursionError`.
    """
    if isinstance(text, bytes | bytearray):
        size = len(text)
        if size > max_bytes:
            raise _too_large(what, size, max_bytes)
        text = bytes(text).decode("utf-8")
    else:
        # A str's UTF-8 size is at most 4 bytes a character; encode only when that bound is over the limit.
        size = len(text) if len(text) * 4 <= max_bytes else len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large(what, size, max_bytes)
    check_depth(nesting_depth(text), max_depth=max_depth, what=what)
    return json.loads(text, parse_constant=_reject_constant)


def _too_large(what: str, size: int, max_bytes: int) -> JsonLimitExceeded:
    return JsonLimitExceeded(
        f"{what} is {size} bytes; the limit is {max_bytes}", limit="size", maximum=max_bytes, actual=size
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
