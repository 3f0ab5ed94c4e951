"""The limited JSON loader: depth and size measured before parsing, never a RecursionError."""

from __future__ import annotations

import pytest

from stepwise.inputs.json_limits import JsonLimitExceeded, load_json, nesting_depth, value_depth


def test_a_document_within_the_limits_parses_as_json_does() -> None:
    assert load_json('{"a": [1, {"b": "c"}]}') == {"a": [1, {"b": "c"}]}


def test_a_document_ten_thousand_deep_is_refused_naming_the_depth_limit() -> None:
    # When a document nests 10,000 arrays
    with pytest.raises(JsonLimitExceeded) as refused:
        load_json("[" * 10_000 + "]" * 10_000, max_depth=64)

    # Then the limit and the depth found are named
    assert (refused.value.limit, refused.value.maximum, refused.value.actual) == ("depth", 64, 10_000)
    assert str(refused.value) == "the JSON document nests 10000 levels deep; the limit is 64"


def test_an_unclosed_deep_document_is_refused_for_its_depth_too() -> None:
    with pytest.raises(JsonLimitExceeded, match="nests 3000 levels"):
        load_json('{"a":' * 3_000)


def test_a_document_over_the_size_limit_is_refused_naming_its_size() -> None:
    with pytest.raises(JsonLimitExceeded) as refused:
        load_json('"' + "é" * 600 + '"', max_bytes=1_000, what="the reply")

    assert (refused.value.limit, refused.value.actual) == ("size", 1_202)
    assert str(refused.value) == "the reply is 1202 bytes; the limit is 1000"


def test_bytes_are_measured_before_they_are_decoded() -> None:
    with pytest.raises(JsonLimitExceeded, match="is 2002 bytes"):
        load_json(b"[" + b"1," * 1_000 + b"]", max_bytes=2_000)


def test_brackets_inside_strings_escaped_quotes_included_do_not_nest() -> None:
    text = '["[[[\\"[[[", "{{{{"]'
    assert nesting_depth(text) == 1
    assert load_json(text, max_depth=1) == ['[[["[[[', "{{{{"]


def test_nan_and_infinity_are_not_json() -> None:
    with pytest.raises(ValueError, match="NaN is not JSON"):
        load_json("[NaN]")


def test_the_depth_of_a_parsed_value_is_measured_without_recursion() -> None:
    value: list[object] = []
    for _ in range(5_000):
        value = [value]
    assert value_depth(value) == 5_001
    assert value_depth({"a": {"b": 1}, "c": [2]}) == 2
    assert value_depth("scalar") == 0
