"""How a replay's call is matched with a recorded one: the tool's name and the arguments as canonical JSON."""

from __future__ import annotations

from stepwise.steps.replay_tools import call_key, canonical_json


def test_key_order_spacing_and_whole_floats_do_not_change_the_match() -> None:
    # Given the same arguments written in another key order, with 100.0 for 100
    recorded = call_key("convert_currency", {"amount": 100, "from": "EUR", "to": "USD"})
    asked = call_key("convert_currency", {"to": "USD", "amount": 100.0, "from": "EUR"})
    # Then the calls match
    assert asked == recorded


def test_any_other_difference_is_another_call() -> None:
    # Given calls that differ in a value, a type, the tool or a nested field
    recorded = call_key("get_weather", {"city": "Paris", "options": {"units": "metric"}})
    others = [
        call_key("get_weather", {"city": "paris", "options": {"units": "metric"}}),
        call_key("get_weather", {"city": "Paris", "options": {"units": "imperial"}}),
        call_key("get_weather", {"city": "Paris"}),
        call_key("get_forecast", {"city": "Paris", "options": {"units": "metric"}}),
        call_key("get_weather", {"city": ["Paris"], "options": {"units": "metric"}}),
    ]
    # Then none of them matches
    assert recorded not in others


def test_canonical_json_keeps_unicode_and_sorts_nested_keys() -> None:
    assert (
        canonical_json({"b": [1.5, 2.0], "a": {"z": "Zürich", "y": True}})
        == '{"a":{"y":true,"z":"Zürich"},"b":[1.5,2]}'
    )
