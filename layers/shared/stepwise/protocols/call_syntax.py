"""Function-call syntax in text: ``get_weather(city="Paris", days=3)``.

Values are JSON or Python literals (quoted strings with escaped quotes, numbers, True/False/None, lists,
objects); a quoted string holding its own quote unescaped (``bash(command='sed -n '1,5p' f')``, as small models
write shell commands) runs to the quote a comma or the closing parenthesis follows; anything else up to the
next top-level comma is read as plain text.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from stepwise.models.messages import ToolSpec
from stepwise.protocols.arguments import parameter_names, parameter_type
from stepwise.protocols.lenient_json import Searches, scan_value

_HEAD = re.compile(r"\s*(?P<name>[^\s()\[\]{}<>\"'`,;=:]+)\s*\(")
_KEYWORD = re.compile(r"\s*(?P<key>[^\W\d]\w*)\s*=(?!=)")
# The quote that ends a value: the one a comma or the closing parenthesis follows.
_QUOTE_END = {quote: re.compile(quote + r"(?=[ \t\r\n]*+[,)])") for quote in ("'", '"')}


class ParsedCall(NamedTuple):
    """A call read from text: the function name, positional and named arguments."""

    name: str
    positional: list[Any]
    named: dict[str, Any]

    def answer(self) -> Any:
        """What a call of the final-answer action gives as the answer: its one positional value
        (``finish("It is 42.")``), else its named arguments (``finish(answer="It is 42.")``)."""
        return self.positional[0] if len(self.positional) == 1 and not self.named else self.named

    def arguments(self, tool: ToolSpec | None) -> dict[str, Any]:
        """Named arguments plus positional ones mapped to the tool's parameters in schema order.

        Positional values beyond the known parameters (or all of them, without a tool) are named
        ``arg0``, ``arg1``, ... by their position. One object given alone (``search({"query": "x"})``, as
        LlamaIndex's ReAct models write) is the arguments, unless the tool's first parameter is an object.
        """
        if not self.named and len(self.positional) == 1 and isinstance(self.positional[0], dict):
            first = next(iter(parameter_names(tool)), None)
            if first is None or parameter_type(tool, first) != "object":
                return {str(key): value for key, value in self.positional[0].items()}
        result = dict(self.named)
        free_names = iter(name for name in parameter_names(tool) if name not in self.named)
        for position, value in enumerate(self.positional):
            result[next(free_names, f"arg{position}")] = value
        return result


def keyword_arguments(text: str, tool: ToolSpec | None) -> dict[str, Any] | None:
    """Arguments written as ``city="Paris", days=3`` or ``city: Paris``, when every name is one of the
    tool's parameters; None otherwise (the text is then a plain value)."""
    names = set(parameter_names(tool))
    if not names:
        return None
    call = parse_call(f"_({text})")
    if call is not None and call.named and not call.positional and set(call.named) <= names:
        return dict(call.named)
    key, colon, value = text.partition(":")
    if colon and "\n" not in text and key.strip() in names and value.strip():
        return {key.strip(): value.strip().strip("\"'")}
    return None


def parse_call(text: str) -> ParsedCall | None:
    """Read ``name(args)`` at the start of a text; None when it is not a call."""
    read = parse_call_at(text, 0)
    return read[0] if read is not None else None


def parse_call_at(text: str, position: int) -> tuple[ParsedCall, int] | None:
    """Read ``name(args)`` at `position`: the call and the index just past its closing parenthesis."""
    head = _HEAD.match(text, position)
    if head is None:
        return None
    return _read_arguments(text, head.end(), head.group("name"))


def _read_arguments(text: str, position: int, name: str) -> tuple[ParsedCall, int] | None:
    """Read the comma-separated arguments after the opening parenthesis, up to the closing one."""
    positional: list[Any] = []
    named: dict[str, Any] = {}
    # where the next value-ending quote of each kind is (-1: none), and where comments end, so that no search
    # runs twice over the text
    quote_ends: dict[str, int] = {}
    searches = Searches(text)
    while True:
        position = _skip_spaces(text, position)
        if position >= len(text):
            return None
        if text[position] == ")":
            return ParsedCall(name, positional, named), position + 1
        keyword = _KEYWORD.match(text, position)
        key = keyword.group("key") if keyword else None
        if keyword is not None:
            position = keyword.end()
        value, position = _read_value(text, position, quote_ends, searches)
        if key is None:
            positional.append(value)
        else:
            named[key] = value
        position = _skip_spaces(text, position)
        if text.startswith(",", position):
            position += 1
        elif not text.startswith(")", position):
            return None


def _read_value(text: str, position: int, quote_ends: dict[str, int], searches: Searches) -> tuple[Any, int]:
    """A literal value, or else plain text up to the next comma or closing parenthesis at depth 0."""
    found = scan_value(text, position, searches)
    if found is not None:
        after = _skip_spaces(text, found[1])
        if after >= len(text) or text[after] in ",)":
            return found
    quote = text[position] if position < len(text) else ""
    if quote in _QUOTE_END:
        end = _quote_end(text, position + 1, quote, quote_ends)
        if end is not None:
            return text[position + 1 : end], end + 1
    depth = 0
    end = position
    while end < len(text):
        char = text[end]
        if char in ",)" and depth == 0:
            break
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        end += 1
    return _tuple_as_list(text[position:end].strip()), end


def _tuple_as_list(plain: str) -> Any:
    """A Python tuple written as a value (``coord=(48.85, 2.29)``) is its items as a JSON list, as Python's own
    reading of the call gives them; any other text is kept as written."""
    if not (plain.startswith("(") and plain.endswith(")") and "," in plain):
        return plain
    listed = f"[{plain[1:-1]}]"
    found = scan_value(listed, 0, Searches(listed))
    return found[0] if found is not None and found[1] == len(listed) and isinstance(found[0], list) else plain


def _quote_end(text: str, start: int, quote: str, known: dict[str, int]) -> int | None:
    """The first value-ending `quote` at or after `start` (searched once: later values reuse what was found)."""
    end = known.get(quote)
    if end is None or 0 <= end < start:
        match = _QUOTE_END[quote].search(text, start)
        end = known[quote] = match.start() if match else -1
    return end if end >= 0 else None


def _skip_spaces(text: str, position: int) -> int:
    """The first index at or after `position` that is not whitespace."""
    while position < len(text) and text[position].isspace():
        position += 1
    return position
