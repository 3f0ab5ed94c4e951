"""The observation a tool call leaves in the conversation, and the one way to cap its length."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field


class ToolObservation(BaseModel):
    """The outcome of one tool call, ready to store: never an exception, always something to show.

    ``content`` is what the model reads next (on failure it says what went wrong); ``error`` repeats the
    failure alone for the trace; ``truncated`` is true when the output was cut anywhere on its way.
    """

    call_id: str
    name: str
    ok: bool
    content: str
    status_code: int | None = None
    error: str | None = None
    latency_ms: float = Field(ge=0)
    truncated: bool = False
    # the length of what the tool answered, when `max_observation_chars` cut it (None when it was not cut here)
    output_chars: int | None = None
    # the whole content (redacted as `content` is) when `max_observation_chars` cut it, to be kept apart
    whole_content: str | None = None


def truncate_text(text: str, max_chars: int, *, beyond: int = 0) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_chars`` characters, marker included; say whether it was cut.

    The marker tells the model how much it is not seeing: ``…[truncated 12345 chars]``. A
    ``max_chars`` shorter than the marker itself yields the marker alone. ``beyond`` counts characters
    that followed ``text`` and were dropped already: the marker counts them too.
    """
    if beyond == 0 and len(text) <= max_chars:
        return text, False
    total = len(text) + beyond
    # The marker for the whole length is at least as long as the final one, so the result fits...
    kept = max(0, min(len(text), max_chars - len(_truncation_marker(total))))
    # ...and when the count of dropped characters has fewer digits, the room it frees is used.
    while kept < len(text) and kept + 1 + len(_truncation_marker(total - kept - 1)) <= max_chars:
        kept += 1
    return text[:kept] + _truncation_marker(total - kept), True


def _truncation_marker(dropped_chars: int) -> str:
    return f"…[truncated {dropped_chars} chars]"


_TRUNCATION_MARKER_AT_END = re.compile(r"…\[truncated \d+ chars\]\Z")


_TRUNCATION_MARKER = re.compile(r"…\[truncated \d+ chars\]")
# How far past the model's cut the tool-result guardrails read a cut result: far enough that a value the cut
# splits (a card number, an e-mail address) is seen whole, not so far that they judge what the model never reads.
GUARD_OVERLAP_CHARS = 256


def _split_copy(cut_copy: str) -> tuple[int, str]:
    """How many characters of its result a cut model's copy carries, and the note it ends with after its marker."""
    markers = list(_TRUNCATION_MARKER.finditer(cut_copy))
    if not markers:
        return len(cut_copy), ""
    return markers[-1].start(), cut_copy[markers[-1].end() :]


def guarded_window(whole: str, cut_copy: str) -> tuple[str, int]:
    """What the guardrails read of the result `whole` whose model's copy is `cut_copy`: what that copy carries
    and `GUARD_OVERLAP_CHARS` more (with the copy's note after it), and how many characters lie past that."""
    carried, note = _split_copy(cut_copy)
    body = whole[: len(whole) - len(note)] if note and whole.endswith(note) else whole
    end = min(len(body), carried + GUARD_OVERLAP_CHARS)
    return body[:end] + note, len(body) - end


def recut(text: str, cut_copy: str, max_chars: int, beyond: int) -> str:
    """The model's copy of `text` (a `guarded_window` as the guardrails left it, `beyond` characters of its result
    past it): cut to `max_chars` as `cut_copy` was, keeping the note it ends with."""
    _, note = _split_copy(cut_copy)
    noted = bool(note) and text.endswith(note)
    body = text[: len(text) - len(note)] if noted else text
    cut, _ = truncate_text(body, max_chars - len(note), beyond=beyond)
    return cut + note if noted else cut


def carried_chars(cut_text: str) -> int:
    """How many characters of the text it was cut from ``cut_text`` (a result of `truncate_text`) carries: its
    length without the marker it ends with."""
    marker = _TRUNCATION_MARKER_AT_END.search(cut_text)
    return marker.start() if marker is not None else len(cut_text)


PREVIEW_CHARS = 500
"""How much of an observation a trace step keeps (the whole text stays in its message item)."""

PREVIEW_MARKER = "…"


def preview_text(text: str, max_chars: int = PREVIEW_CHARS) -> str:
    """The start of ``text`` as a trace shows it: the whole text when it fits in ``max_chars``, else its first
    ``max_chars`` characters followed by ``…``, so a cut preview never passes for the whole."""
    return text if len(text) <= max_chars else text[:max_chars] + PREVIEW_MARKER


def utf8_bytes(text: str) -> int:
    """The size of ``text`` in UTF-8, as it is stored and sent (a lone surrogate counted as its 3 bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))
