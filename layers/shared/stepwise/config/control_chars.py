"""Control characters in configured text that goes onto the wire as it is: a tool's path, a key, a header.

A carriage return or line feed there ends a header or the request line early, so whatever follows it is
read by the server as a header or a request of its own; other control characters are refused by HTTP
clients and servers alike, or mangle what the server sees. Such a value is refused when the
configuration is loaded, naming the field, rather than at the first call.
"""

import re

# C0, DEL and C1: Unicode's category Cc. A tab is among them: legal inside a header value, but no key,
# path or header of a configuration needs one, and one rule is easier to state.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMES = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", "\t": "a tab", "\x00": "a NUL character"}


def control_character(text: str) -> str | None:
    """The first control character in ``text``, named for a person (``a line feed (LF)``), or None."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    character = found.group()
    return _NAMES.get(character, f"the control character U+{ord(character):04X}")


def without_control_characters(text: str, *, what: str) -> str:
    """``text`` unchanged; `ValueError` naming ``what`` and the character when it holds a control character.

    The message never repeats the text: ``what`` may be a credential.
    """
    found = control_character(text)
    if found is not None:
        raise ValueError(f"{what} holds {found}; no control character can be sent in a request")
    return text
