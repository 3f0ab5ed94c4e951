"""The lenient JSON reader: the defects models write are read, garbage gives None."""

from __future__ import annotations

import pytest

from stepwise.protocols.lenient_json import find_objects, load_lenient, scan_value, strip_code_fence


def test_standard_json_is_read_as_is() -> None:
    # Given standard JSON / When read / Then the value is the stdlib's
    assert load_lenient('{"a": [1, 2.5, "x"], "b": null}') == {"a": [1, 2.5, "x"], "b": None}


def test_single_quotes_are_read() -> None:
    # Given single-quoted keys and values with an escaped quote / When read / Then they are strings
    assert load_lenient("{'name': 'O\\'Brien'}") == {"name": "O'Brien"}


def test_trailing_commas_are_read() -> None:
    # Given trailing commas in an object and an array / When read / Then they are ignored
    assert load_lenient('{"tags": ["a", "b",], "n": 1,}') == {"tags": ["a", "b"], "n": 1}


def test_unquoted_keys_are_read() -> None:
    # Given unquoted keys / When read / Then they become string keys
    assert load_lenient('{city: "Paris", max_days: 3}') == {"city": "Paris", "max_days": 3}


def test_python_literals_are_read_as_json_literals() -> None:
    # Given Python True/False/None / When read / Then they are true/false/null
    assert load_lenient("{'a': True, 'b': False, 'c': None}") == {"a": True, "b": False, "c": None}


def test_raw_newlines_inside_strings_are_kept() -> None:
    # Given a string with a raw newline (invalid JSON, common in model output) / When read / Then kept
    assert load_lenient('{"text": "line one\nline two"}') == {"text": "line one\nline two"}


def test_missing_commas_between_members_are_tolerated() -> None:
    # Given members separated only by a newline / When read / Then both members are there
    assert load_lenient('{"a": 1\n "b": 2}') == {"a": 1, "b": 2}


def test_comments_are_skipped() -> None:
    # Given line and block comments between members / When read / Then they are ignored
    assert load_lenient('{"a": 1, // the first\n /* second */ "b": 2}') == {"a": 1, "b": 2}


def test_a_fenced_block_is_read_with_or_without_language_tag() -> None:
    # Given the same object fenced with and without a language tag / When read / Then both give it
    assert load_lenient('```json\n{"a": 1}\n```') == {"a": 1}
    assert load_lenient('```\n{"a": 1}\n```') == {"a": 1}


def test_unicode_escapes_and_surrogate_pairs_are_decoded() -> None:
    # Given \\u escapes for an accented letter and an emoji pair / When read / Then characters result
    assert load_lenient("{'s': '\\u00e9\\ud83d\\ude00'}") == {"s": "é😀"}


def test_a_lone_surrogate_is_replaced() -> None:
    # Given a lone high surrogate (cannot be stored as UTF-8) / When read leniently / Then it is U+FFFD
    assert load_lenient("{'s': '\\ud800x'}") == {"s": "\ufffdx"}


@pytest.mark.parametrize(
    "garbage",
    ["", "   ", "not json", '{"a": 1', '{"a": }', "{'a': 1} and more", "[" * 500, '"\\uZZZZ"', "{a b}"],
)
def test_unreadable_text_gives_none(garbage: str) -> None:
    # Given text that is no single JSON value / When read / Then None, and nothing raises
    assert load_lenient(garbage) is None


def test_scan_value_reports_where_the_value_ends() -> None:
    # Given a value followed by prose / When scanned from its start / Then the end index is just after it
    text = '{"a": "}"} and then prose'
    assert scan_value(text, 0) == ({"a": "}"}, 10)


def test_find_objects_skips_braces_in_prose_and_strings() -> None:
    # Given prose with a stray brace, then two objects, one holding a brace inside a string
    text = 'I will use {braces} here {"q": "a } b"} and {x: 1}'
    # When objects are found
    found = [span.value for span in find_objects(text)]
    # Then only the readable objects are returned, in order
    assert found == [{"q": "a } b"}, {"x": 1}]


def test_find_objects_reads_an_object_after_braces_no_object_starts_at() -> None:
    # Given runs of braces no object can start at (`{{`, `{[`, `{ word{`), then an object
    text = "{{{ {[ {: { word{ {a: 1}"
    # When objects are found / Then the object is found, once
    assert [span.value for span in find_objects(text)] == [{"a": 1}]


def test_find_objects_goes_on_after_a_failed_key_not_from_inside_it() -> None:
    # Given a brace whose quoted key holds a brace, and no colon after the key
    text = '{"x{"a": 1}'
    # When objects are found / Then none: the read of the first key passed over the brace inside it
    assert list(find_objects(text)) == []


def test_strip_code_fence_keeps_inner_fences() -> None:
    # Given a fenced block whose content holds another fence
    text = "```markdown\nuse:\n```python\nprint(1)\n```\n```"
    # When the outer fence is stripped / Then the inner fence is still there
    assert strip_code_fence(text) == "use:\n```python\nprint(1)\n```"
