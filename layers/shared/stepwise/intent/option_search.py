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
# The spaces around a quote are read once (`\s*+`): split between the two runs every way, a label and 20,000
# spaces (an answer's cap) cost 5 s.
_LINE_LABEL_SEPARATOR = r"\s*+[\"'`]?\s*+(?:[:=\uff1a]|->|=>)"
_UNSPACED = re.compile(f"[{_UNSPACED_SCRIPTS}]")
# A line that gives the answer under a label of its own ("分类结果: 金融", full-width colon too; "Category: Finance").
_RESULT_LABEL = re.compile(
    r"^[\W_]*(?:意图分类结果|分类结果|意图|分类|类别|结果|答案|最终答案|intent|category|classification|result|answer|label)"
    r"[^:\uff1a\n]{0,8}[:\uff1a]\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
# An option named only to be ruled out: "不是投诉建议", "不涉及法律或电商", "not Finance", "rather than Law".
_NEGATIONS = r"不是|不属于|并非|而非|不涉及|无关|排除|not|isn't|is not|rather than|instead of|neither|nor"
_LIST_JOINERS = r"\s*(?:或|和|与|、|\uff0c|,|/|or|and)\s*"
_QUOTE_OPENERS = "[\"'`\u201c\u2018\u300c\u300a\u3010]?"


def canonical_option(value: object, category: Category) -> str | None:
    """The option of `category` that `value` names (ignoring case, quotes, end punctuation), else None.

    A Chinese (or Japanese, Korean) answer that is part of exactly one option names it: models shorten
    such option names ("售后" for "售后服务").
    """
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str):
        return None
    folded = value.strip(_QUOTES_AND_STOPS).casefold()
    for option in category.options:
        if option.casefold() == folded:
            return option
    if len(folded) >= 2 and _UNSPACED.search(folded):
        holding = [option for option in category.options if folded in option.casefold()]
        if len(holding) == 1:
            return holding[0]
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


def labelled_answers(text: str, categories: list[Category]) -> dict[str, str]:
    """The options given on answer lines ("分类结果: 金融"), which the explanation after them may contradict."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _RESULT_LABEL.match(line.strip())
        if match is None:
            continue
        for category in categories:
            option = find_option(without_ruled_out(match.group("rest"), category), category)
            if option is not None:
                values.setdefault(category.use_for, option)
    return values


def without_ruled_out(text: str, category: Category) -> str:
    """The text without the options it names only to rule them out (and without those negations)."""
    names = "|".join(re.escape(option) for option in sorted(category.options, key=len, reverse=True))
    named = f"{_QUOTE_OPENERS}(?:{names})[\"'`\u201d\u2019\u300d\u300b\u3011]?"
    ruled_out = re.compile(f"(?:{_NEGATIONS})\\s*{named}(?:{_LIST_JOINERS}{named})*", re.IGNORECASE)
    return ruled_out.sub(" ", text)


def search_text(text: str, categories: list[Category]) -> dict[str, str]:
    """Read options out of free text: labelled lines first, then a whole-text search per category."""
    lines = text.splitlines()
    values: dict[str, str] = {}
    for category in categories:
        option = _find_on_labelled_line(lines, category) or find_option(text, category)
        if option is not None:
            values[category.use_for] = option
    return values
