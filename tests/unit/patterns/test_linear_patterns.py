"""Patterns others write compile for RE2 once, with what RE2 lacks named and the spellings it lacks translated."""

from __future__ import annotations

import threading

import pytest

from stepwise.patterns.linear import LinearPattern, PatternError, compiled


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        ("secret(?=s)", "a lookahead `(?=`"),
        ("secret(?!s)", "a negative lookahead `(?!`"),
        ("(?<=x)y", "a lookbehind `(?<=`"),
        ("(?<!x)y", "a negative lookbehind `(?<!`"),
        (r"(\w)\1", r"a backreference `\1`"),
        (r"(?P<c>\w)\k<c>", r"a named backreference `\k`"),
        ("a++", "a possessive quantifier `++`"),
        ("(?>a|ab)c", "an atomic group `(?>`"),
    ],
)
def test_a_construct_re2_lacks_is_refused_by_name(pattern: str, named: str) -> None:
    # Given a pattern using a construct of backtracking engines, when it is compiled
    with pytest.raises(PatternError) as raised:
        compiled(pattern)
    # Then the error names the construct and why it is not run
    assert raised.value.unsupported
    assert str(raised.value) == (
        f"{named} is not supported: patterns run on RE2, which takes time linear in the text and has no "
        "lookaround, backreferences, atomic groups or possessive quantifiers"
    )


def test_a_malformed_pattern_is_refused_as_not_a_regular_expression() -> None:
    # Given an unclosed group, when it is compiled / Then the error says it is no regular expression at all
    with pytest.raises(PatternError) as raised:
        compiled("(unclosed")
    assert (raised.value.unsupported, str(raised.value)) == (False, "not a regular expression: missing ): (unclosed")


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"^\u00e9t\u00E9$", "été", True),  # ECMA-262 and Python's \uHHHH (four hex digits)
        (r"\u{1F600}", "a 😀", True),  # ECMA-262's \u{...}
        (r"\U0001F600", "a 😀", True),  # Python's \UHHHHHHHH (eight hex digits)
        (r"\\u0041", "\\u0041", True),  # an escaped backslash stays one
        (r"done\Z", "done", True),  # Python's end of text
        (r"done\Z", "done\n", False),
        (r"^\p{Script=Greek}+$", "αβγ", True),  # ECMA-262's property names
        (r"^\p{gc=L}+$", "été", True),
        (r"^\d+$", "٣", False),  # \d keeps RE2's (and ECMA-262's) ASCII meaning
    ],
)
def test_spellings_re2_lacks_are_translated(pattern: str, text: str, found: bool) -> None:
    # Given a pattern spelt the ECMA-262 or the Python way, when it is searched in a text
    # Then it means what it means there
    assert compiled(pattern).search(text) is found


def test_a_lone_surrogate_in_the_text_is_searched_as_a_replacement_character() -> None:
    # Given a text with a lone surrogate (valid in a Python str and in JSON, not in UTF-8)
    text = "code \ud800 here"
    # When patterns are searched in it / Then they are found around it, and it reads as U+FFFD
    assert compiled("here$").search(text)
    assert compiled("\ufffd").search(text)


def test_a_case_insensitive_pattern_finds_any_case() -> None:
    # Given an intent rule's pattern (compiled case-insensitive), when searched / Then any case matches
    assert compiled("exchange rate", ignore_case=True).search("the EXCHANGE Rate")
    assert not compiled("exchange rate").search("the EXCHANGE Rate")


def test_a_pattern_is_compiled_once_whichever_thread_asks() -> None:
    # Given 32 threads (as many as `stepwise serve` runs handlers in) asking for the same new pattern at once
    start = threading.Barrier(32)
    results: list[LinearPattern] = []

    def ask() -> None:
        start.wait()
        results.append(compiled(r"\bparallel-\d{3}\b"))

    threads = [threading.Thread(target=ask) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then each gets a working pattern, and a later ask gets the kept one
    assert len(results) == 32
    assert all(each.search("x parallel-007 y") for each in results)
    assert compiled(r"\bparallel-\d{3}\b") is compiled(r"\bparallel-\d{3}\b")
