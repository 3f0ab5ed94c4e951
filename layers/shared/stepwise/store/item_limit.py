"""Every item the store writes fits DynamoDB's item limit: measured as the service measures items, and cut,
with a marker, when it would not fit.

What enters a run is capped where it enters (a reply's text and arguments at `models/reply_limits.py`'s caps, an
observation at the profile's `max_observation_chars`, a request body at `api.max_body_bytes`), but an
item can still add up past 400 KB: a reply's text and arguments in 4-byte characters, a long answer beside
its structured output on META, a body limit configured above its default. DynamoDB refuses such a write
outright (a ValidationException, which fails the run), so each one is measured before it is sent. One
that is over has its largest strings cut, the largest first, each ending with a marker that says how many
characters the store left out, until the item fits. A string inside an attribute the store keeps as JSON
text (`JSON_TEXT_ATTRIBUTES`: tool calls, a step's trace...) is cut inside the JSON, so its readers still
parse it. Keys and index keys are never cut.

The size is computed by hand: the rules are AWS's published ones ("Item sizes and formats": attribute
names and values in UTF-8 bytes, numbers by significant digits, 3 bytes for a list or map and 1 for each
element), and no maintained library computes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from stepwise.errors import StorePermanentError

MAX_ITEM_BYTES = 400_000
"""DynamoDB's 400 KB read as 400,000 bytes: below the 409,600 the service allows and the 405,000 moto
allows, so an item measured a little low still fits."""

JSON_TEXT_ATTRIBUTES = frozenset(
    {"tool_calls", "images", "reasoning", "trace", "data", "options", "output", "arguments"}
)
"""The attributes the store writes as JSON text (`store/items.py`, `conversation.py`, `approvals.py`,
`summaries.py`): cut inside their JSON, never as text."""

NEVER_CUT = frozenset({"pk", "sk", "owner", "run_order", "waiting_owner", "waiting_order"})
"""The table's keys and its indexes' (`RunsByOwner`, `WaitingApprovalsByOwner`), which identify an item
rather than hold content."""

_MIN_CUT_BYTES = 1024
# "\n[cut by the store: the last N characters did not fit ...]", with N as long as it can be
_MARKER = "\n[cut by the store: the last {dropped:,} characters did not fit DynamoDB's 400 KB item limit]"

AttributeValue = dict[str, Any]


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _number_size(number: str) -> int:
    """1 byte per two significant digits, plus 1 (leading and trailing zeros are not stored)."""
    mantissa = number.lower().split("e")[0].lstrip("-+").replace(".", "")
    significant = mantissa.strip("0") or "0"
    return (len(significant) + 1) // 2 + 1


def value_size(value: AttributeValue) -> int:
    """The size DynamoDB counts for one attribute value (its name not included)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return _utf8(data)
    if kind == "N":
        return _number_size(data)
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(element) for element in data)
    if kind == "M":
        return 3 + sum(1 + _utf8(name) + value_size(element) for name, element in data.items())
    if kind == "SS":
        return sum(_utf8(element) for element in data)
    if kind == "NS":
        return sum(_number_size(element) for element in data)
    if kind == "BS":
        return sum(len(element) for element in data)
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: dict[str, AttributeValue]) -> int:
    """The size DynamoDB counts for an item: each attribute's name and value."""
    return sum(_utf8(name) + value_size(value) for name, value in item.items())


@dataclass
class _Leaf:
    """One string of the item that may be cut: where it is, its text, and how to put a new text there."""

    where: str
    text: str
    in_json: bool
    put: Callable[[str], None]

    @property
    def size(self) -> int:
        return _encoded_size(self.text, self.in_json)


def _encoded_size(text: str, in_json: bool) -> int:
    """The bytes `text` takes in the item: as UTF-8, or as a JSON string literal inside JSON text."""
    return _utf8(json.dumps(text, ensure_ascii=False)) - 2 if in_json else _utf8(text)


def _cut(text: str, keep_bytes: int, in_json: bool) -> str:
    """`text` cut to at most `keep_bytes` bytes as encoded in its place, ended by the marker."""
    kept = text.encode("utf-8", "surrogatepass")[: max(keep_bytes, 0)].decode("utf-8", "ignore")
    # JSON escapes only lengthen a string: shorten what UTF-8 kept until its literal fits too
    while kept and (excess := _encoded_size(kept, in_json) - keep_bytes) > 0:
        kept = kept[: -max(excess // 6, 1)]
    return kept + _MARKER.format(dropped=len(text) - len(kept))


class _ItemStrings:
    """The cuttable strings of a serialized item, JSON text attributes decoded, and the item rebuilt."""

    def __init__(self, item: dict[str, AttributeValue], frozen: frozenset[str]) -> None:
        self.item = dict(item)
        self._documents: dict[str, Any] = {}
        self.leaves: list[_Leaf] = []
        for name, value in item.items():
            if name in frozen:
                continue
            if name in JSON_TEXT_ATTRIBUTES and "S" in value:
                try:
                    self._documents[name] = json.loads(value["S"])
                except ValueError:
                    pass
                else:
                    self._walk_json(name, self._documents[name], name)
                    continue
            self._walk_value(name, value, partial(self.item.__setitem__, name))

    def _walk_value(self, where: str, value: AttributeValue, replace: Callable[[AttributeValue], None]) -> None:
        ((kind, data),) = value.items()
        if kind == "S":
            self.leaves.append(_Leaf(where, data, False, lambda text: replace({"S": text})))
        elif kind == "M":
            copy = dict(data)
            replace({"M": copy})
            for key, element in data.items():
                self._walk_value(f"{where}.{key}", element, partial(copy.__setitem__, key))
        elif kind == "L":
            elements = list(data)
            replace({"L": elements})
            for index, element in enumerate(data):
                self._walk_value(f"{where}[{index}]", element, partial(elements.__setitem__, index))

    def _walk_json(self, where: str, node: Any, attribute: str) -> None:
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            place = f"{where}.{key}" if isinstance(node, dict) else f"{where}[{key}]"
            if isinstance(child, str):
                self.leaves.append(_Leaf(place, child, True, self._json_setter(node, key, attribute)))
            else:
                self._walk_json(place, child, attribute)

    def _json_setter(self, node: Any, key: Any, attribute: str) -> Callable[[str], None]:
        def put(text: str) -> None:
            node[key] = text
            self.item[attribute] = {
                "S": json.dumps(self._documents[attribute], ensure_ascii=False, separators=(",", ":"))
            }

        return put


def fit_item(
    item: dict[str, AttributeValue], *, limit: int = MAX_ITEM_BYTES, frozen: frozenset[str] = NEVER_CUT
) -> tuple[dict[str, AttributeValue], list[str]]:
    """The serialized `item` as it fits `limit`, and where it was cut (empty when it fitted as it was).

    The largest string (of at least 1 KB, outside `frozen` attributes) is cut by what the item is over,
    then the next largest if that was not enough; `StorePermanentError` if cutting every such string
    cannot bring the item within `limit`.
    """
    size = item_size(item)
    if size <= limit:
        return item, []
    strings = _ItemStrings(item, frozen)
    candidates = sorted(
        (leaf for leaf in strings.leaves if leaf.size >= _MIN_CUT_BYTES), key=lambda leaf: leaf.size, reverse=True
    )
    cut: list[str] = []
    for leaf in candidates:
        marker = _utf8(_MARKER.format(dropped=len(leaf.text)))
        leaf.put(_cut(leaf.text, leaf.size - (size - limit) - marker, leaf.in_json))
        cut.append(leaf.where)
        size = item_size(strings.item)
        if size <= limit:
            return strings.item, cut
    raise StorePermanentError(
        f"an item of {size:,} bytes does not fit DynamoDB's item limit of {limit:,} even with its long strings cut"
    )
