"""A bound on YAML aliases: a few hundred bytes of anchors can stand for billions of values.

A YAML parser builds an alias as a reference to the anchored list or dict, so parsing such a document
is cheap; everything that walks the result afterwards (depth checks, text cleaning, copies, JSON
encoding) meets each shared value once per place it appears. `check_alias_expansion` counts the
values as those walkers would, visiting each shared value once (so it costs one pass over what was
parsed), and refuses a document whose aliases expand it past the limit.
"""

from __future__ import annotations

from typing import Any

# Far more than a hand-written configuration or an OpenAPI description that reuses schemas through
# anchors; walking this many values costs about a second.
MAX_EXPANDED_VALUES = 1_000_000


class AliasExpansionExceeded(ValueError):
    """A parsed YAML document's aliases expand it past `MAX_EXPANDED_VALUES` (or into itself)."""


def check_alias_expansion(value: Any, *, what: str, max_values: int = MAX_EXPANDED_VALUES) -> None:
    """Raise `AliasExpansionExceeded` naming ``what`` when ``value`` expands to more than ``max_values``."""
    sizes: dict[int, int] = {}
    open_now: set[int] = set()

    def expanded(item: Any) -> int:
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            return 1
        key = id(item)
        if key in sizes:
            return sizes[key]
        if key in open_now:
            raise AliasExpansionExceeded(f"the YAML aliases of {what} make it contain itself")
        open_now.add(key)
        total = 1
        for child in children:
            total += expanded(child)
            if total > max_values:
                raise AliasExpansionExceeded(
                    f"the YAML aliases of {what} expand it to more than {max_values} values "
                    "(the limit against alias bombs)"
                )
        open_now.discard(key)
        sizes[key] = total
        return total

    expanded(value)
