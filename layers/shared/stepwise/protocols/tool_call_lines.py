"""Calls written as lines of their own, in the markup of models that have no tool-call tokens.

- NexusRaven-V2 opens its reply with ``Call:`` and Python calls, separated by semicolons, up to ``<bot_end>``
  (a special token a server may drop) or the end of the line; its explanation follows as ``Thought:``.
- Functionary v3 writes each message as ``>>>recipient`` on a line, then its content: ``>>>all`` for text to the
  user, ``>>>get_weather`` then the JSON arguments for a call (several follow each other on one turn).

Both are read here rather than in `tool_call_markup` because they open with plain text, not a tag: only the
start of the reply (NexusRaven) or a recipient line holding a JSON object (Functionary) counts as a call.
"""

from __future__ import annotations

import re

from stepwise.protocols.lenient_json import scan_value
from stepwise.protocols.tool_call_markup import Found, TextCall, pythonic_calls

_CALL_LINE = re.compile(r"\A\s*+Call:[ \t]*+")
_CALL_LINE_END = re.compile(r"<bot_end>|\n")
_CALL_HEAD = re.compile(r"[ \t]*+(?P<name>[A-Za-z_][\w.]*+)[ \t]*+\(")
_RECIPIENT = re.compile(r">>>(?P<name>[A-Za-z_][\w.\-]*+)[ \t]*+\n")
# Functionary's recipient for text addressed to the user.
_TEXT_RECIPIENT = "all"


def call_line_calls(text: str) -> Found | None:
    """NexusRaven's ``Call: f(a=1); g(b=2)<bot_end>`` at the start of the reply."""
    opening = _CALL_LINE.match(text)
    if opening is None:
        return None
    end = _CALL_LINE_END.search(text, opening.end())
    calls = pythonic_calls(text[opening.end() : end.start() if end else len(text)].strip().rstrip(";"))
    return Found(opening.start(), calls) if calls else None


def nested_call(text: str) -> tuple[str, str] | None:
    """The inner and outer names of a call passed unquoted as another call's argument on a ``Call:`` line
    (NexusRaven writes ``f(x=g(y=1))`` for its caller to eval), or None. One pass over the line: quotes and
    parentheses are tracked, and a name right after a keyword's ``=`` that a parenthesis follows is a call."""
    opening = _CALL_LINE.match(text)
    if opening is None:
        return None
    end = _CALL_LINE_END.search(text, opening.end())
    line = text[opening.end() : end.start() if end else len(text)]
    quote = ""
    depth = 0
    segment = 0
    outer = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote and line[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            outer = line[segment:index].strip() if depth == 0 else outer
            depth += 1
        elif char == ")":
            depth -= 1
        elif char in ",;" and depth == 0:
            segment = index + 1
        elif char == "=" and depth == 1 and (inner := _CALL_HEAD.match(line, index + 1)) is not None:
            return inner.group("name"), outer
    return None


def recipient_calls(text: str) -> Found | None:
    """Functionary's ``>>>name`` lines whose content is a JSON object: one call each (``>>>all`` text is not)."""
    markers = list(_RECIPIENT.finditer(text))
    calls: list[TextCall] = []
    start: int | None = None
    for index, marker in enumerate(markers):
        if marker.group("name") == _TEXT_RECIPIENT:
            continue
        end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
        content = text[marker.end() : end].strip()
        value = scan_value(content, 0) if content.startswith("{") else None
        if value is None or not isinstance(value[0], dict):
            return None
        start = marker.start() if start is None else start
        calls.append(TextCall(marker.group("name"), value[0]))
    return Found(start, calls) if start is not None else None
