"""Items measured as DynamoDB measures them, and cut to fit its item limit: largest strings first, marked,
JSON text kept JSON, keys untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepwise.errors import StorePermanentError
from stepwise.store.item_limit import fit_item, item_size


def test_an_item_is_measured_by_its_names_and_values_in_utf8_bytes() -> None:
    # Given an item with a string, a number, and a map holding a list
    item: dict[str, Any] = {
        "pk": {"S": "RUN#é"},  # 2 + 6
        "n": {"N": "-0012.3400"},  # 1 + (4 significant digits: 2 bytes) + 1
        "m": {"M": {"ab": {"L": [{"S": "xyz"}, {"BOOL": True}]}}},  # 1 + 3 + (1 + 2 + (3 + (1 + 3) + (1 + 1)))
    }
    # When it is measured / Then each part counts as AWS documents it
    assert item_size(item) == 8 + 4 + 16


def test_an_item_within_the_limit_is_left_as_it_is() -> None:
    # Given an item under the limit
    item = {"pk": {"S": "RUN#1"}, "sk": {"S": "META"}, "answer": {"S": "x" * 5000}}
    # When it is fitted / Then nothing is cut
    assert fit_item(item, limit=6000) == (item, [])


def test_the_largest_string_loses_what_the_item_is_over_and_ends_with_a_marker() -> None:
    # Given an item 3,000 bytes over its limit, whose largest string is "content"
    item = {
        "pk": {"S": "RUN#1"},
        "sk": {"S": "MSG#0001#000"},
        "content": {"S": "c" * 8000},
        "name": {"S": "n" * 2000},
    }
    limit = item_size(item) - 3000
    # When it is fitted
    fitted, cut = fit_item(item, limit=limit)
    # Then only the content was cut, to fit, and it says how many characters it lost
    assert cut == ["content"] and item_size(fitted) <= limit
    assert fitted["name"] == item["name"] and fitted["pk"] == item["pk"]
    kept, marker = fitted["content"]["S"].split("\n[cut by the store: the last ")
    assert marker == f"{8000 - len(kept):,} characters did not fit DynamoDB's 400 KB item limit]"
    assert 8000 - len(kept) >= 3000


def test_a_string_inside_json_text_is_cut_inside_the_json_which_still_parses() -> None:
    # Given a message item whose tool calls (JSON text) hold a long, escaped argument
    calls = [{"id": "c1", "name": "write", "arguments": {"text": 'line "quoted"\n' * 1000}}]
    item = {"pk": {"S": "RUN#1"}, "sk": {"S": "MSG#0001#000"}, "tool_calls": {"S": json.dumps(calls)}}
    limit = item_size(item) - 4000
    # When it is fitted
    fitted, cut = fit_item(item, limit=limit)
    # Then the argument was cut inside the JSON, which reads back as the same call with a marked text
    assert cut == ["tool_calls[0].arguments.text"] and item_size(fitted) <= limit
    (call,) = json.loads(fitted["tool_calls"]["S"])
    assert (call["id"], call["name"]) == ("c1", "write")
    assert call["arguments"]["text"].startswith('line "quoted"\nline')
    assert "characters did not fit DynamoDB's 400 KB item limit]" in call["arguments"]["text"]


def test_strings_are_cut_largest_first_until_the_item_fits() -> None:
    # Given two long strings in a map, and a limit that the larger alone cannot meet
    item: dict[str, Any] = {
        "pk": {"S": "RUN#1"},
        "sk": {"S": "META"},
        "output": {"M": {"a": {"S": "a" * 5000}, "b": {"S": "b" * 4000}}},
    }
    # When it is fitted to 3,000 bytes
    fitted, cut = fit_item(item, limit=3000)
    # Then the larger was cut first, then the other
    assert cut == ["output.a", "output.b"] and item_size(fitted) <= 3000


def test_keys_are_never_cut_and_an_item_that_cannot_fit_is_a_permanent_error() -> None:
    # Given an item whose only long strings are its key and the owner index's key
    item = {"pk": {"S": "RUN#" + "k" * 3000}, "sk": {"S": "META"}, "owner": {"S": "o" * 3000}}
    # When it is fitted below its size / Then it is refused, naming the limit, with its keys untouched
    with pytest.raises(StorePermanentError, match="does not fit DynamoDB's item limit of 4,000"):
        fit_item(item, limit=4000)
