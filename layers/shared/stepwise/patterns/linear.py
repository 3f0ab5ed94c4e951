"""Compiling a pattern someone else wrote for RE2, once, and saying what RE2 cannot run.

RE2 (`google-re2`) is imported on the first compile: a handler whose configuration holds no pattern, and a
tool call whose schema has none, never loads it (it costs about 50 ms of a cold start). Compiled patterns,
and the patterns that did not compile, are kept (the 4096 last used): the same few come back on every
call, from any of `stepwise serve`'s threads (`functools.lru_cache` is safe to call from several at once;
two threads compiling the same new pattern both get a working one).

A few spellings RE2 lacks but whose meaning it has are rewritten first (`translated`): `\\uHHHH`,
`\\u{H…}` and `\\UHHHHHHHH` (ECMA-262 and Python) become `\\x{…}`, Python's end of text `\\Z` becomes `\\z`,
and ECMA-262's `\\p{Script=Greek}` and `\\p{General_Category=L}` become `\\p{Greek}` and `\\p{L}`. Nothing
else is translated: `\\d`, `\\w`, `\\s` and `\\b` keep RE2's ASCII meaning (ECMA-262's for `\\d`, `\\w` and
`\\b`; Python's `re` counts any script's digits, letters and spaces), which `\\p{..}` can widen where wanted. An
operator's pattern that holds non-ASCII letters and `\\b` or `\\w` is refused (`check_pattern`): written
against `re`, it would silently stop matching them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# Kept compiled per process: tool schemas imported from a large API hold a few thousand patterns.
_PATTERNS_KEPT = 4096
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# What RE2 does not have, named from the fragment its error message quotes.
_OPERATORS = {
    "(?=": "a lookahead `(?=`",
    "(?!": "a negative lookahead `(?!`",
    "(?<=": "a lookbehind `(?<=`",
    "(?<!": "a negative lookbehind `(?<!`",
    "(?>": "an atomic group `(?>`",
    "(?(": "a conditional group `(?(`",
}
_WHY_UNSUPPORTED = (
    "patterns run on RE2, which takes time linear in the text and has no lookaround, backreferences, "
    "atomic groups or possessive quantifiers"
)
# `\b`, `\B`, `\w` and `\W` after any number of escaped backslashes (which the first alternative takes in pairs).
_WORD_ESCAPE = re.compile(r"\\\\|\\([bBwW])")
# One escape at a time, so that an escaped backslash followed by `u0041` stays a backslash and text.
_ESCAPE = re.compile(
    r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(Z)"
    r"|([pP])\{(?:Script|sc|Script_Extensions|scx|General_Category|gc)=([A-Za-z_]+)\}|.)",
    re.DOTALL,
)


class PatternError(ValueError):
    """A pattern RE2 refuses: `unsupported` when it uses a construct RE2 lacks, else it is malformed."""

    def __init__(self, reason: str, *, unsupported: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported


class LinearPattern:
    """A compiled pattern; `search` takes time linear in the text."""

    __slots__ = ("_regexp", "pattern")

    def __init__(self, pattern: str, regexp: Any) -> None:
        self.pattern = pattern
        self._regexp = regexp

    def search(self, text: str) -> bool:
        """Whether the pattern is found anywhere in `text` (a lone surrogate is read as U+FFFD)."""
        try:
            return self._regexp.search(text) is not None
        except UnicodeEncodeError:  # RE2 reads UTF-8, which has no lone surrogates
            return self._regexp.search(_LONE_SURROGATE.sub("\ufffd", text)) is not None


def compiled(pattern: str, *, ignore_case: bool = False) -> LinearPattern:
    """`pattern` compiled for RE2; raises `PatternError` saying what is wrong when RE2 cannot run it."""
    outcome = _compile(pattern, ignore_case)
    if isinstance(outcome, PatternError):
        raise outcome
    return outcome


def check_pattern(pattern: str, *, ignore_case: bool = False) -> None:
    """Raise `PatternError` when RE2 cannot run `pattern` (for a configuration's validators), or when it
    would silently never match where Python's `re` did: an operator wrote it against `re`'s meaning."""
    compiled(pattern, ignore_case=ignore_case)
    problem = _ascii_word_problem(pattern)
    if problem is not None:
        raise problem


def _ascii_word_problem(pattern: str) -> PatternError | None:
    """The error for a pattern holding non-ASCII letters and `\\b`/`\\w`, which RE2 reads as ASCII only:
    `\\b你好\\b` matched "你好" under `re` and never matches under RE2, with no error to say so."""
    if pattern.isascii():
        return None
    escape = next((found.group(1) for found in _WORD_ESCAPE.finditer(pattern) if found.group(1)), None)
    if escape is None:
        return None
    return PatternError(
        f"`\\{escape}` counts only ASCII letters and digits on RE2, and this pattern holds non-ASCII "
        "letters, where it no longer matches as it did on Python's `re` (`\\b你好\\b` never matches): write a "
        "word character as `[\\p{L}\\p{N}_]` and a word's edge as `(?:^|[^\\p{L}\\p{N}_])`",
        unsupported=True,
    )


def translated(pattern: str) -> str:
    """`pattern` with the spellings RE2 lacks but whose meaning it has rewritten (see the module's docstring)."""

    def rewrite(match: re.Match[str]) -> str:
        braced, four, eight, end_of_text, property_kind, property_value = match.groups()
        if braced or four or eight:
            return "\\x{" + (braced or four or eight) + "}"
        if property_kind:
            return f"\\{property_kind}{{{property_value}}}"
        return "\\z" if end_of_text else match.group()

    return _ESCAPE.sub(rewrite, pattern)


@functools.lru_cache(maxsize=_PATTERNS_KEPT)
def _compile(pattern: str, ignore_case: bool) -> LinearPattern | PatternError:
    import re2

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # the error is raised with the field named; RE2 would also print it to stderr
    try:
        return LinearPattern(pattern, re2.compile(translated(pattern), options))
    except re2.error as exc:
        return _error(exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc))


def _error(message: str) -> PatternError:
    kind, _, fragment = message.partition(": ")
    construct: str | None = None
    if kind == "invalid perl operator":
        construct = next((name for prefix, name in _OPERATORS.items() if fragment.startswith(prefix)), None)
    elif kind == "invalid escape sequence" and fragment[1:2].isdigit():
        construct = f"a backreference `{fragment}`"
    elif kind == "invalid escape sequence" and fragment.startswith("\\k"):
        construct = "a named backreference `\\k`"
    elif kind == "bad repetition operator" and fragment[1:2] == "+":
        construct = f"a possessive quantifier `{fragment}`"
    if construct is not None:
        return PatternError(f"{construct} is not supported: {_WHY_UNSUPPORTED}", unsupported=True)
    if kind == "invalid repetition size":
        return PatternError(
            f"the repetition `{fragment}` is over RE2's limit (1000, nested counts multiplied)", unsupported=True
        )
    if message.startswith("pattern too large"):
        return PatternError("the pattern is too large for RE2 to compile", unsupported=True)
    return PatternError(f"not a regular expression: {message}", unsupported=False)
