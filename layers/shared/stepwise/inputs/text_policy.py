"""The one text policy for everything that enters Stepwise.

Some characters cannot be stored or sent on: a lone UTF-16 surrogate (U+D800-U+DFFF) has no UTF-8
encoding, so DynamoDB, JSON encoders and HTTP clients refuse it; NUL breaks C consumers and logs. Text
from a caller is refused with the field named (`find_unencodable`); text from a model or a tool is
repaired the same way everywhere (`clean_text`, `clean_value`), each replaced character becoming U+FFFD
so the change is visible, and the caller of `clean_value` learns how many were replaced so it can say so.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"

# Lone surrogates and NUL. A valid surrogate pair never appears in a Python str (it is one code point).
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def find_unencodable(text: str, *, include_nul: bool = True) -> str | None:
    """Why `text` cannot be stored or sent, naming the first offending character; None when it can.

    Without `include_nul` only lone surrogates count: NUL is valid JSON and UTF-8, and the store
    replaces it, so a caller's NUL need not be refused.
    """
    match = (_UNENCODABLE if include_nul else _LONE_SURROGATE).search(text)
    if match is None:
        return None
    char = match.group()
    what = "a NUL character" if char == "\x00" else f"a lone surrogate U+{ord(char):04X}"
    return f"contains {what} at position {match.start()}, which cannot be encoded as UTF-8"


def clean_text(text: str) -> str:
    """`text` with every character that cannot be stored or sent replaced by U+FFFD."""
    return _UNENCODABLE.sub(REPLACEMENT, text)


def count_unencodable(text: str) -> int:
    """How many characters `clean_text` would replace."""
    return len(_UNENCODABLE.findall(text))


def clean_value(value: Any) -> tuple[Any, int]:
    """A JSON-like value with every string (keys included) cleaned, and the number of characters replaced."""
    if isinstance(value, str):
        replaced = count_unencodable(value)
        return (clean_text(value) if replaced else value), replaced
    if isinstance(value, dict):
        total = 0
        cleaned: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, key_count = clean_value(key) if isinstance(key, str) else (key, 0)
            new_item, item_count = clean_value(item)
            cleaned[new_key] = new_item
            total += key_count + item_count
        return cleaned, total
    if isinstance(value, list | tuple):
        total = 0
        items = []
        for item in value:
            new_item, count = clean_value(item)
            items.append(new_item)
            total += count
        return items, total
    return value, 0


def replacement_note(replaced: int) -> str:
    """The note appended where characters were replaced, so the model and the trace see it happened."""
    plural = "s" if replaced != 1 else ""
    return f"[{replaced} character{plural} that cannot be encoded (lone surrogate or NUL) replaced with U+FFFD]"


def locate_unencodable(value: Any, field: str = "", *, include_nul: bool = True) -> tuple[str, str] | None:
    """The first string of a JSON-like value (keys included) that cannot be stored: its dotted field and why.

    Fields are named as the API names them (`messages.0.content`); a key is named by its parent with
    ` (a key)` added. None when every string can be stored. `include_nul` as for `find_unencodable`.
    """
    pending: list[tuple[Any, str]] = [(value, field)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            reason = find_unencodable(item, include_nul=include_nul)
            if reason is not None:
                return where or "body", reason
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                key_text = str(key)
                reason = find_unencodable(key_text, include_nul=include_nul)
                if reason is not None:
                    return f"{where or 'body'} (a key)", reason
                pending.append((child, f"{where}.{key_text}" if where else key_text))
        elif isinstance(item, list | tuple):
            pending.extend(
                (child, f"{where}.{index}" if where else str(index)) for index, child in reversed(list(enumerate(item)))
            )
    return None
