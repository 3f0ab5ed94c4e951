"""A forgiving JSON reader for what models really write.

Besides standard JSON it reads single-quoted strings, trailing or missing commas, unquoted keys, Python
literals (``True``/``False``/``None``, read as true/false/null), raw newlines inside strings and ``//`` or
``/* */`` comments. It never raises: an unreadable document gives ``None``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

# Deep enough for any real tool argument, shallow enough to stay far from Python's recursion limit.
_MAX_DEPTH = 64

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_BARE_WORD = re.compile(r"[^\s:,{}\[\]\"'=()]+")
# From the start of a run of word characters only: searched from each of them, a long run followed by
# punctuation was read to its end again and again.
_LAST_WORD = re.compile(r"(?<!\w)\w+$")
_OPENER = re.compile(r"[{\[]")
# A brace an object may start at: after blanks and commas, a `}`, a quote, or an unquoted key and then blanks and a
# `:`. At any other brace (`{{{`, `{[`, `{ x{` in prose) the reader fails having read nothing but blanks, commas and
# a key, none of them a brace: the search passes over those in one scan of this expression instead of one read each.
# A `/` (a comment, or a key's first character) is left to the reader. Each scan stops at the next brace: linear.
_OBJECT_START = re.compile(r"\{(?=[\s,]*(?:[}\"'/]|[^\s:,{}\[\]\"'=()]+\s*[:/]))")
_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
# A string's characters that need no look: all but its own quote and the backslash.
_PLAIN = {'"': re.compile(r'[^"\\]+'), "'": re.compile(r"[^'\\]+")}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
# After the three backticks: a language tag alone on its line, a tag then a space before an inline JSON
# value, or nothing (```get_weather(...)``` has no tag: a word glued to the content is the content).
_FENCE_OPENER = re.compile(r"```(?:[\w+.-]*[ \t]*(?:\n|$)|[\w+.-]+[ \t]+(?=[\[{])|)")


class JsonSpan(NamedTuple):
    """A JSON object found inside a longer text: where it starts and ends, and its value."""

    start: int
    end: int
    value: dict[str, Any]


class _Unreadable(Exception):
    """Raised inside the reader only; the public functions turn it into None."""


class Searches:
    """The ends of comments found in one text, remembered: a caller that reads many values from one text
    (`call_syntax`'s arguments) would otherwise search from each of them to the end of a text whose comment
    is never closed. Each answer is the first end at or after a position, so any later position up to it has
    the same answer."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._found: dict[str, tuple[int, int]] = {}

    def find(self, needle: str, start: int) -> int:
        """`text.find(needle, start)`, without searching again where an earlier search found nothing."""
        known = self._found.get(needle)
        if known is not None and known[0] <= start and (known[1] < 0 or start <= known[1]):
            return known[1]
        found = self.text.find(needle, start)
        self._found[needle] = (start, found)
        return found


class _Reader:
    """Recursive-descent reader over one string, starting at a given position."""

    def __init__(self, text: str, pos: int, searches: Searches | None = None) -> None:
        self.text = text
        self.pos = pos
        self.searches = searches if searches is not None else Searches(text)
        # Objects read completely, even inside a document that turns out unreadable (see find_objects); and
        # arrays, as (start, end, value) (see first_container).
        self.completed: list[JsonSpan] = []
        self.arrays: list[tuple[int, int, list[Any]]] = []

    def skip_blank(self) -> None:
        """Skip whitespace and comments."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char.isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                newline = self.searches.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline + 1
            elif text.startswith("/*", self.pos):
                close = self.searches.find("*/", self.pos + 2)
                if close < 0:
                    # The rest of the text is the comment: no search should start inside it again.
                    self.pos = len(text)
                    raise _Unreadable
                self.pos = close + 2
            else:
                return

    def peek(self) -> str:
        """The current character, or "" at the end."""
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self, depth: int) -> Any:
        """Read any value at the current position."""
        if depth > _MAX_DEPTH:
            raise _Unreadable
        self.skip_blank()
        char = self.peek()
        if not char:
            raise _Unreadable
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char in "\"'":
            return self.string()
        return self.scalar()

    def object(self, depth: int) -> dict[str, Any]:
        """Read an object; commas between members are optional, a trailing one is allowed."""
        start = self.pos
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            self.skip_commas()
            char = self.peek()
            if char == "}":
                self.pos += 1
                self.completed.append(JsonSpan(start, self.pos, result))
                return result
            if not char:
                raise _Unreadable
            key = self.string() if char in "\"'" else self.bare_key()
            self.skip_blank()
            if self.peek() != ":":
                raise _Unreadable
            self.pos += 1
            result[key] = self.value(depth + 1)

    def array(self, depth: int) -> list[Any]:
        """Read an array; commas between items are optional, a trailing one is allowed."""
        start = self.pos
        self.pos += 1
        result: list[Any] = []
        while True:
            self.skip_commas()
            char = self.peek()
            if char == "]":
                self.pos += 1
                self.arrays.append((start, self.pos, result))
                return result
            if not char:
                raise _Unreadable
            result.append(self.value(depth + 1))

    def skip_commas(self) -> None:
        """Skip blanks and any number of commas."""
        self.skip_blank()
        while self.peek() == ",":
            self.pos += 1
            self.skip_blank()

    def bare_key(self) -> str:
        """Read an unquoted key such as ``city`` in ``{city: "Paris"}``."""
        match = _BARE_WORD.match(self.text, self.pos)
        if match is None:
            raise _Unreadable
        self.pos = match.end()
        return match.group()

    def string(self) -> str:
        """Read a single- or double-quoted string with JSON and Python escapes."""
        quote = self.text[self.pos]
        self.pos += 1
        plain = _PLAIN[quote]
        parts: list[str] = []
        text = self.text
        while True:
            # the characters up to the next quote or backslash, in one step
            run = plain.match(text, self.pos)
            if run is not None:
                parts.append(run.group())
                self.pos = run.end()
            if self.pos >= len(text):
                raise _Unreadable
            if text[self.pos] == quote:
                self.pos += 1
                return "".join(parts)
            parts.append(self.escape())

    def escape(self) -> str:
        """Read one backslash escape; an unknown escape is kept as written."""
        text = self.text
        code = text[self.pos + 1 : self.pos + 2]
        if code == "u":
            high = self.hex4(self.pos + 2)
            self.pos += 6
            if 0xD800 <= high < 0xDC00 and text.startswith("\\u", self.pos):
                low = self.hex4(self.pos + 2)
                if 0xDC00 <= low < 0xE000:
                    self.pos += 6
                    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            # A lone surrogate cannot be encoded as UTF-8 later (DynamoDB, HTTP), so it is replaced.
            return "\ufffd" if 0xD800 <= high < 0xE000 else chr(high)
        self.pos += 2
        return _ESCAPES.get(code, "\\" + code)

    def hex4(self, start: int) -> int:
        """Read the four hex digits of a ``\\u`` escape."""
        digits = self.text[start : start + 4]
        if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise _Unreadable
        return int(digits, 16)

    def scalar(self) -> Any:
        """Read a number or a literal (JSON or Python spelling)."""
        number = _NUMBER.match(self.text, self.pos)
        word = _BARE_WORD.match(self.text, self.pos)
        if word is not None and word.group() in _LITERALS:
            self.pos = word.end()
            return _LITERALS[word.group()]
        if number is None or (word is not None and word.end() > number.end()):
            raise _Unreadable
        self.pos = number.end()
        literal = number.group()
        try:
            if any(c in literal for c in ".eE"):
                return float(literal)
            return int(literal)
        except ValueError as exc:  # more digits than Python converts
            raise _Unreadable from exc


def strip_code_fence(text: str) -> str:
    """The body of a text that is one fenced code block (with or without a language tag), else the text."""
    stripped = text.strip()
    opener = _FENCE_OPENER.match(stripped)
    if opener is None:
        return text
    body = stripped[opener.end() :].rstrip()
    # A closing fence may be missing: a stop sequence or the token limit can cut the block short.
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


def scan_value(text: str, start: int, searches: Searches | None = None) -> tuple[Any, int] | None:
    """Read one value starting at ``start``; return it and the index just past it, or None. A caller that
    reads many values of one text passes the same `searches` to each read."""
    reader = _Reader(text, start, searches)
    try:
        value = reader.value(0)
    except (_Unreadable, RecursionError):
        return None
    return value, reader.pos


def load_lenient(text: str) -> Any | None:
    """Read a whole text (optionally one fenced block) as a single JSON value; None when unreadable."""
    body = strip_code_fence(text).strip()
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        pass
    found = scan_value(body, 0)
    if found is None:
        return None
    value, end = found
    rest = _Reader(body, end)
    try:
        rest.skip_blank()
    except _Unreadable:
        return None
    return value if rest.pos == len(body) else None


class StringTracker:
    """Follows quoted strings (with backslash escapes) through a JSON-like text, one character at a time, so
    a scan of its brackets can pass over the brackets inside strings."""

    def __init__(self, quotes: str) -> None:
        self.quotes = quotes
        # the quote of the string the scan is inside ("" outside any)
        self.open_quote = ""
        self._escaped = False

    def outside(self, char: str) -> bool:
        """Take the next character; True when it stands outside every string (a quote is part of its string)."""
        if self.open_quote:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == self.open_quote:
                self.open_quote = ""
            return False
        if char in self.quotes:
            self.open_quote = char
            return False
        return True


def close_cut_off(body: str) -> Any | None:
    """An object or array cut off after a complete value, read with its missing closing brackets added.

    Only a repair with one possible reading is made: a text that ends inside a string, after a key or a
    colon, on a number (which may have had more digits), or that is broken anywhere else gives None.
    """
    closers: list[str] = []
    strings = StringTracker("\"'")
    for char in body:
        if not strings.outside(char):
            continue
        if char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and (not closers or closers.pop() != char):
            return None
    if strings.open_quote or not closers:
        return None
    stripped = body.rstrip()
    trimmed = stripped.rstrip(",").rstrip()
    complete = stripped.endswith(",") or trimmed.endswith(('"', "'", "}", "]"))
    if not complete:
        last_word = _LAST_WORD.search(trimmed)
        complete = last_word is not None and last_word.group() in _LITERALS
    if not complete:
        return None
    value = load_lenient(trimmed + "".join(reversed(closers)))
    return value if isinstance(value, dict | list) else None


def find_objects(text: str) -> Iterator[JsonSpan]:
    """Every readable top-level JSON object inside a text (prose, fences and all), in order.

    Linear in the text: a read that fails is not started again from each brace it went past. The
    objects it did read completely before failing are yielded (the outermost ones), and the search
    goes on where the read stopped.
    """
    searches = Searches(text)
    found = _OBJECT_START.search(text)
    while found is not None:
        position = found.start()
        reader = _Reader(text, position, searches)
        try:
            value = reader.value(0)
        except (_Unreadable, RecursionError):
            if reader.completed:
                yield from _outermost(reader.completed)
            found = _OBJECT_START.search(text, max(reader.pos, position + 1))
            continue
        if isinstance(value, dict):
            yield JsonSpan(position, reader.pos, value)
        found = _OBJECT_START.search(text, reader.pos)


def first_container(text: str) -> dict[str, Any] | list[Any] | None:
    """The first readable object or array inside a text (prose, fences and all): the one that starts first.

    Linear in the text, as `find_objects`: a read that fails is not started again from each bracket it went
    past (a reply of a thousand `[` cost a million reads). The values it did read completely before failing
    are those reads' answers; the first of them is the first readable value.
    """
    position = _next_opener(text, 0)
    while position >= 0:
        reader = _Reader(text, position)
        try:
            value: dict[str, Any] | list[Any] = reader.value(0)
        except (_Unreadable, RecursionError):
            read: list[tuple[int, int, dict[str, Any] | list[Any]]] = [
                (span.start, -span.end, span.value) for span in reader.completed
            ]
            read += [(start, -end, array) for start, end, array in reader.arrays]
            if read:
                return min(read, key=lambda found: (found[0], found[1]))[2]
            position = _next_opener(text, max(reader.pos, position + 1))
            continue
        return value
    return None


def _next_opener(text: str, start: int) -> int:
    """Where the next `{` or `[` from `start` is, or -1 (one search: two `find`s would each read to the end of
    a text that holds only the other)."""
    found = _OPENER.search(text, start)
    return found.start() if found is not None else -1


def _outermost(spans: list[JsonSpan]) -> list[JsonSpan]:
    """The spans not inside another one, in text order (inner objects complete before outer ones)."""
    result: list[JsonSpan] = []
    for span in sorted(spans, key=lambda span: (span.start, -span.end)):
        if not result or span.start >= result[-1].end:
            result.append(span)
    return result
