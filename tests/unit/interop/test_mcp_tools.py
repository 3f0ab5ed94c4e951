"""Profiles as MCP tools, and an ended run as a tool result: the translation, at the function boundary."""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from stepwise.config.model import StepwiseConfig
from stepwise.interop.mcp_tools import RUN_ID_META, profile_tools, run_result, tool_arguments

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def config() -> StepwiseConfig:
    model = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}
    profiles: dict[str, Any] = {
        "default": {"model": "m"},
        "cities": {"model": "m", "description": "Names a city.", "response_schema": CITY},
        "lists": {"model": "m", "response_schema": {"type": "array", "items": {"type": "string"}}},
    }
    return StepwiseConfig.model_validate({"models": {"m": model}, "profiles": profiles})


def texts(result: CallToolResult) -> list[str]:
    """The text blocks of a tool result."""
    return [block.text for block in result.content if isinstance(block, TextContent)]


def ended(status: str = "SUCCEEDED", **fields: Any) -> dict[str, Any]:
    return {"run_id": "r1", "status": status, "outcome": "answered", "answer": "Paris.", **fields}


def test_a_profile_whose_schema_is_an_object_has_it_as_the_tools_output_schema() -> None:
    # When the profiles are listed as tools
    tools = {tool.name: tool for tool in profile_tools(config())}
    # Then an object schema is the output schema; an array schema is not (MCP's must be an object)
    assert (tools["cities"].output_schema, tools["lists"].output_schema, tools["default"].output_schema) == (
        CITY,
        None,
        None,
    )
    assert (tools["cities"].description, tools["default"].description) == (
        "Names a city.",
        "Ask the Stepwise agent profile 'default'. (the default profile)",
    )


def test_a_structured_answer_is_the_results_structured_content_and_its_text() -> None:
    # When a run of a profile with an object schema ended with its output
    result = run_result(ended(output={"city": "Paris"}), structured=True)
    # Then the output is the structured content, and also JSON text after the answer
    assert (result.is_error, result.structured_content) == (False, {"city": "Paris"})
    assert texts(result) == ["Paris.", '{"city": "Paris"}']
    assert result.meta is not None and result.meta[RUN_ID_META] == "r1"


def test_a_structured_profiles_run_without_its_output_is_an_error_saying_why() -> None:
    # When the run answered but its output could not be made
    result = run_result(ended(output=None, output_error="not valid JSON"), structured=True)
    # Then the result is an error naming the reason, with the answer
    assert result.is_error is True
    assert "without its structured output: not valid JSON" in texts(result)[0]


def test_a_cancelled_run_is_an_error_naming_its_stop_reason() -> None:
    # When the run ended CANCELLED, without an error of its own
    result = run_result(ended("CANCELLED", answer=None, stop_reason="cancelled", outcome="none"), structured=False)
    # Then the error says how it ended
    assert (result.is_error, texts(result)[0]) == (True, "run r1 ended CANCELLED (stop reason cancelled)")


def test_arguments_other_than_a_question_are_refused_naming_each_field() -> None:
    # When a call's arguments lack the question and carry an unknown field
    refused = tool_arguments({"query": "x"})
    # Then each problem is named
    assert refused == "invalid arguments: question: Field required; query: Extra inputs are not permitted"
