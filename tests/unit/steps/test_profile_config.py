"""Validation of an agent profile's tool_choice and response_schema when the configuration is loaded."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError


def load(**profile: Any) -> StepwiseConfig:
    return StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}},
            "profiles": {"default": {"model": "m"} | profile},
        },
        source="test.yaml",
        environ={},
    )


@pytest.mark.parametrize("choice", ["auto", "required", "none", "get_weather"])
def test_a_mode_or_one_of_the_profile_tools_is_a_valid_tool_choice(choice: str) -> None:
    # Given a profile limited to get_weather; When it is loaded with the choice; Then the choice is kept
    assert load(tools=["get_weather"], tool_choice=choice).profile("default").tool_choice == choice


def test_a_named_tool_choice_outside_the_profile_tools_is_refused() -> None:
    # Given a tool_choice naming a tool the profile may not use; When loaded; Then the error names it
    with pytest.raises(ConfigError, match="tool_choice: 'send_email' is not one of the profile's tools"):
        load(tools=["get_weather"], tool_choice="send_email")


def test_a_tool_choice_that_is_no_mode_and_no_tool_name_is_refused() -> None:
    # Given a tool_choice with characters no tool name has; When loaded; Then the field and reason are named
    with pytest.raises(ConfigError, match=r"profiles\.default\.tool_choice: .*must be one of auto, required, none"):
        load(tool_choice="any tool")


def test_a_valid_object_schema_is_accepted_as_response_schema() -> None:
    # Given an object schema; When loaded; Then it is kept as given
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert load(response_schema=schema).profile("default").response_schema == schema


def test_an_invalid_json_schema_is_refused_with_where_it_is_wrong() -> None:
    # Given a schema whose property type is not a JSON Schema type; When loaded
    schema = {"type": "object", "properties": {"city": {"type": "text"}}}
    # Then the error names the field and the place in the schema
    with pytest.raises(ConfigError, match=r"response_schema: .*not a valid JSON Schema \(at properties/city/type\)"):
        load(response_schema=schema)


def test_a_schema_whose_top_level_is_not_an_object_or_array_is_refused() -> None:
    # Given a string schema; When loaded; Then the error says what the top level must be
    with pytest.raises(ConfigError, match='top-level "type" must be "object" or "array"'):
        load(response_schema={"type": "string"})
