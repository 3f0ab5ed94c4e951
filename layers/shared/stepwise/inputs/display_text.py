r"""Text shown to a person, with every character that is invisible or reorders what follows made visible.

A tool call's arguments or a tool's observation may hold characters that change what a person reads without
showing themselves: bidi overrides and isolates (`acct-1234\u202e0009` reads `acct-12349000`), zero-width
characters, line and paragraph separators, and control characters (a carriage return or an escape sequence
rewrites a terminal line). Wherever such text is shown to a person (the API's approval views, the CLI's trace)
each one is written as its JSON escape (`\u202e`; a character past the BMP as the escapes of its two
surrogates, `\udb40\udc41`), so what is shown is what the tool would receive. The characters escaped are
Unicode's categories Cc (but the line feed and the tab, which are layout), Cf (the bidi controls among them),
Zl and Zp. The console applies the same rule to what it shows of a trace (`visible` in the console's common.js).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
# Every character that can be one of them: printable ASCII, LF and TAB never are, so text in plain ASCII
# costs one regex scan and no lookup.
_CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    if unicodedata.category(character) not in _ESCAPED_CATEGORIES:
        return character
    code = ord(character)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible(text: str) -> str:
    """`text` with each invisible or control character (but LF and TAB) written as its escape."""
    return _CANDIDATE.sub(_escape, text)


def arguments_display(arguments: Any) -> str:
    """A tool call's arguments as a person should read them: JSON text in which every invisible character is
    written as its JSON escape, so the text also parses back to the very same arguments."""
    return visible(json.dumps(arguments, ensure_ascii=False))
