"""Matching what a model wrote against a category's options: exact values and a search of free text."""

from __future__ import annotations

import re
from functools import lru_cache

from stepwise.config.intent import Category

# Scripts written without spaces between words: an option in them is found inside a longer run of text,
# and a Latin option next to them still counts as a whole word ("属于Finance类别").
_UNSPACED_SCRIPTS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_SPACED_WORD_CHAR = f"[^\\W{_UNSPACED_SCRIPTS}]"
# ASCII and typographic quotes, and ASCII and full-width sentence punctuation.
_QUOTES_AND_STOPS = "\"'`\u201c\u201d\u2018\u2019\u300c\u300d \t\r\n.\u3002!\uff01?\uff1f,\uff0c;\uff1b"
_LINE_LABEL_SEPARATOR = r"\s*[\"'`]?\s*(?:[:=\uff1a]|->|=>)"


def canonical_option(value: object, category: Category) -> str | None:
    """The option of `category` that `value` names (ignoring case, quotes, end punctuation), else None."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str):
        return None
    folded = value.strip(_QUOTES_AND_STOPS).casefold()
    for option in category.options:
        if option.casefold() == folded:
            return option
    return None


@lru_cache(maxsize=1024)
def _whole_word(option: str) -> re.Pattern[str]:
    edge_is_word = re.compile(_SPACED_WORD_CHAR)
    before = f"(?<!{_SPACED_WORD_CHAR})" if edge_is_word.match(option[0]) else ""
    after = f"(?!{_SPACED_WORD_CHAR})" if edge_is_word.match(option[-1]) else ""
    return re.compile(before + re.escape(option) + after, re.IGNORECASE)


def find_option(text: str, category: Category) -> str | None:
    """The one option of `category` named in `text` as a whole word, or None when none or several are.

    Longer options are looked for first and blanked out once found, so "Non-urgent" is not also read
    as "urgent".
    """
    found: list[str] = []
    remaining = text
    for option in sorted(category.options, key=len, reverse=True):
        pattern = _whole_word(option)
        if pattern.search(remaining):
            found.append(option)
            remaining = pattern.sub(" ", remaining)
    return found[0] if len(found) == 1 else None


def _find_on_labelled_line(lines: list[str], category: Category) -> str | None:
    """The option on a line such as `intent-route: Finance`, which settles options shared by categories."""
    label = re.compile(
        r"^[\W_]*" + re.escape(category.use_for) + _LINE_LABEL_SEPARATOR + r"(?P<rest>.*)$", re.IGNORECASE
    )
    for line in lines:
        match = label.match(line.strip())
        if match:
            option = find_option(match.group("rest"), category)
            if option is not None:
                return option
    return None


def search_text(text: str, categories: list[Category]) -> dict[str, str]:
    """Read options out of free text: labelled lines first, then a whole-text search per category."""
    lines = text.splitlines()
    values: dict[str, str] = {}
    for category in categories:
        option = _find_on_labelled_line(lines, category) or find_option(text, category)
        if option is not None:
            values[category.use_for] = option
    return values
