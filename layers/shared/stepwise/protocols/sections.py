"""Tagged sections of a completion (``<action>...</action>``, ``/*ACTION*/ ... /*END_ACTION*/``).

The XML and marker protocols share the same reading: an opening tag starts a section that runs to its
closing tag, or, when the model forgot it or a stop sequence cut it off, to the next opening tag or
the end of the text. Other tags inside a section are part of its content.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from stepwise.protocols.keywords import find_keywords, first_after


class Tag(NamedTuple):
    """One opening or closing tag: the section kind it belongs to, and where it is."""

    kind: str
    closing: bool
    start: int
    end: int


class Section(NamedTuple):
    """One tagged section: its kind, where it starts and ends (tags included), and its content."""

    kind: str
    start: int
    end: int
    content: str


def find_sections(text: str, pattern: re.Pattern[str], read_tag: Callable[[re.Match[str]], Tag]) -> list[Section]:
    """The top-level sections of a text, in order; `read_tag` turns a pattern match into a `Tag`."""
    tags = [read_tag(match) for match in pattern.finditer(text)]
    sections: list[Section] = []
    index = 0
    while index < len(tags):
        opening = tags[index]
        index += 1
        if opening.closing:
            continue
        closing_at = _closing_index(tags, index, opening.kind)
        if closing_at is not None:
            closing = tags[closing_at]
            sections.append(Section(opening.kind, opening.start, closing.end, text[opening.end : closing.start]))
            index = closing_at + 1
            continue
        next_opening = next((i for i in range(index, len(tags)) if not tags[i].closing), len(tags))
        end = tags[next_opening].start if next_opening < len(tags) else len(text)
        sections.append(Section(opening.kind, opening.start, end, text[opening.end : end]))
        index = next_opening
    return sections


def _closing_index(tags: list[Tag], start: int, kind: str) -> int | None:
    """The index of the tag closing a section of `kind`, searched before the next section of that kind."""
    for index in range(start, len(tags)):
        if tags[index].kind == kind:
            return index if tags[index].closing else None
    return None


def hallucination_limit(text: str, sections: list[Section], after: int) -> int:
    """Where a hallucinated observation starts after position `after` (tagged or ``Observation:``), or the end."""
    tagged = next((s.start for s in sections if s.kind == "observation" and s.start >= after), len(text))
    keyword = first_after(find_keywords(text), "observation", after)
    return min(tagged, keyword.start if keyword else len(text))


def ignored_notes(*, extra_actions: int, observation_cut: bool) -> list[str]:
    """The notes a `ToolCalls` decision carries about what the parser left out."""
    notes: list[str] = []
    if extra_actions:
        notes.append(f"the reply had {extra_actions + 1} actions; the first was taken, the rest were ignored")
    if observation_cut:
        notes.append("an observation written by the model, and everything after it, was ignored")
    return notes
