"""The text policy: what cannot be stored or sent is named at the boundary and replaced elsewhere."""

from __future__ import annotations

import json

from stepwise.inputs.text_policy import REPLACEMENT, clean_text, clean_value, find_unencodable, replacement_note


def test_lone_surrogate_is_named_with_its_position() -> None:
    # Given text a caller sent with a lone surrogate
    # When it is checked
    reason = find_unencodable("ab\ud800")
    # Then the reason names the character and where it is
    assert reason is not None and "U+D800" in reason and "position 2" in reason


def test_nul_is_named() -> None:
    assert "NUL" in (find_unencodable("a\x00b") or "")


def test_ordinary_text_including_astral_characters_passes() -> None:
    assert find_unencodable("Paris 天气 🌧 café") is None


def test_cleaned_text_encodes_as_utf8() -> None:
    # Given text a model wrote with both kinds of unencodable character
    cleaned = clean_text("x\udfff y\x00")
    # Then every one is replaced and the result encodes
    assert cleaned == f"x{REPLACEMENT} y{REPLACEMENT}"
    cleaned.encode("utf-8")


def test_clean_value_repairs_keys_and_nested_strings_and_counts_them() -> None:
    # Given a tool's JSON response with surrogates in a key and deep in a list
    value = {"k\ud800": ["ok", {"v": "\udc00\udc00"}], "n": 3}
    # When it is cleaned
    cleaned, replaced = clean_value(value)
    # Then every string is repaired, other values kept, and the count says how many changed
    assert replaced == 3
    assert cleaned == {f"k{REPLACEMENT}": ["ok", {"v": REPLACEMENT * 2}], "n": 3}
    json.dumps(cleaned).encode("utf-8")


def test_note_counts_characters() -> None:
    assert replacement_note(1).startswith("[1 character ")
    assert replacement_note(2).startswith("[2 characters ")


def test_the_first_unencodable_string_of_a_value_is_named_by_its_dotted_field() -> None:
    from stepwise.inputs.text_policy import locate_unencodable

    body = {"input": "fine", "messages": [{"content": "ok"}, {"content": [{"text": "a\ud800"}]}]}
    field, reason = locate_unencodable(body) or ("", "")
    assert field == "messages.1.content.0.text"
    assert reason == "contains a lone surrogate U+D800 at position 1, which cannot be encoded as UTF-8"


def test_a_key_that_cannot_be_stored_is_named_by_its_parent() -> None:
    from stepwise.inputs.text_policy import locate_unencodable

    assert locate_unencodable({"metadata": {"k\x00": "v"}}) == (
        "metadata (a key)",
        "contains a NUL character at position 1, which cannot be encoded as UTF-8",
    )
    assert locate_unencodable({"a": ["b", 1, None]}) is None
