"""The pieces of a structured answer: reading JSON from a reply, validating it, and the formatting request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepwise.config.llm import ModelCapabilities
from stepwise.models.messages import Completion, ToolCall
from stepwise.models.run import StoredMessage
from stepwise.steps.structured_output import (
    STRUCTURED_TOOL_NAME,
    formatting_request,
    output_mode,
    read_json,
    reply_problem,
    reply_text,
    schema_violation,
    split_formatting_replies,
)
from stepwise.store.keys import observation_slot

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "array", "items": {"type": "integer"}}},
    "required": ["city"],
}


def stored(role: str, content: str, iteration: int, slot: int, **fields: Any) -> StoredMessage:
    fields |= {"role": role, "content": content, "iteration": iteration, "slot": slot}
    return StoredMessage.model_validate(fields)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ('```json\n{"city": "Paris"}\n```', {"city": "Paris"}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('Sure! Here is the JSON:\n{"city": "Paris", "days": [1]}\nAnything else?', {"city": "Paris", "days": [1]}),
        ("{'city': 'Paris',}", {"city": "Paris"}),
        ("The days are [3, 4].", [3, 4]),
        # inside a value that does not read, the first one that does (an object or an array)
        ('[1, {"city": "Paris"}, and so on', {"city": "Paris"}),
        ('{"city": "Paris", "days": [1, 2], note: see above}', [1, 2]),
        ("[[1] [2] and so on", [1]),
    ],
)
def test_read_json_finds_the_value_in_what_models_write(reply: str, expected: Any) -> None:
    # Given a reply as a model might write it; When it is read; Then the JSON value comes out
    assert read_json(reply) == expected


def test_read_json_gives_none_for_a_reply_without_json() -> None:
    # Given prose only; When it is read; Then there is no value
    assert read_json("It rains in Paris.") is None


def test_a_valid_value_has_no_schema_violation() -> None:
    # Given a value that matches the schema; When it is validated; Then nothing is wrong
    assert schema_violation({"city": "Paris", "days": [1, 2]}, SCHEMA) is None


def test_a_schema_violation_names_the_path_and_the_reason() -> None:
    # Given a value whose second day is not an integer; When it is validated
    problem = schema_violation({"city": "Paris", "days": [1, "two"]}, SCHEMA)
    # Then the problem points at that item and says why
    assert problem == "at $.days[1]: 'two' is not of type 'integer'"


def test_a_reply_without_json_is_a_problem_of_its_own() -> None:
    # Given a prose reply; When it is checked against the schema; Then the problem says it is not JSON
    assert reply_problem("No idea.", SCHEMA) == (None, "the reply is not JSON")


@pytest.mark.parametrize(
    ("capabilities", "schema_type", "mode"),
    [
        (ModelCapabilities(json_mode=True, native_tools=True), "object", "json_mode"),
        (ModelCapabilities(native_tools=True), "object", "tool"),
        (ModelCapabilities(native_tools=True), "array", "prompt"),
        (ModelCapabilities(), "object", "prompt"),
    ],
)
def test_the_output_mode_follows_the_model_capabilities(
    capabilities: ModelCapabilities, schema_type: str, mode: str
) -> None:
    # Given a model's capabilities and a schema type; When the mode is chosen; Then it is the expected one
    assert output_mode(capabilities, {"type": schema_type}) == mode


def test_the_formatting_request_renders_tool_calls_and_results_as_plain_text() -> None:
    # Given a native conversation with one tool call and its result
    history = [
        stored("user", "Weather in Paris?", 0, 0),
        stored("assistant", "", 1, 0, tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})]),
        stored("tool", '{"condition": "rain"}', 1, 1, tool_call_id="c1", name="get_weather"),
        stored("assistant", "Rain in Paris.", 2, 0),
    ]
    # When the formatting request is built in prompt mode
    request = formatting_request(
        history, system_prompt="Be brief.", schema=SCHEMA, answer="Rain in Paris.", mode="prompt", earlier=[]
    )
    # Then roles alternate as plain text, and the last message asks for JSON matching the schema
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert request.messages[2].content == '(called tool get_weather with {"city": "Paris"})'
    assert request.messages[3].content == 'Result of tool get_weather:\n{"condition": "rain"}'
    assert json.dumps(SCHEMA) in request.messages[-1].content
    assert (request.tools, request.response_schema, request.tool_choice) == ([], None, None)


def test_the_formatting_request_in_json_mode_carries_the_schema() -> None:
    # Given JSON mode; When the request is built; Then the schema goes as the response schema
    request = formatting_request([], system_prompt="", schema=SCHEMA, answer="A.", mode="json_mode", earlier=[])
    assert request.response_schema == SCHEMA


def test_the_formatting_request_in_tool_mode_forces_the_one_answer_tool() -> None:
    # Given tool mode; When the request is built
    request = formatting_request([], system_prompt="", schema=SCHEMA, answer="A.", mode="tool", earlier=[])
    # Then the only tool takes the schema as parameters and is forced
    assert [(tool.name, tool.parameters) for tool in request.tools] == [(STRUCTURED_TOOL_NAME, SCHEMA)]
    assert request.tool_choice == STRUCTURED_TOOL_NAME


def test_a_retry_request_shows_the_rejected_reply_and_its_problem() -> None:
    # Given one rejected reply; When the next request is built
    earlier = [('{"days": []}', "at $: 'city' is a required property")]
    request = formatting_request([], system_prompt="", schema=SCHEMA, answer="A.", mode="prompt", earlier=earlier)
    # Then the reply is the model's turn and the problem follows as the user's
    assert [(m.role, m.content) for m in request.messages[-2:]] == [
        ("assistant", '{"days": []}'),
        (
            "user",
            "That reply does not match the schema: at $: 'city' is a required property.\n"
            "Reply again with corrected JSON only.",
        ),
    ]


def test_the_reply_of_a_forced_tool_call_is_its_arguments_as_json() -> None:
    # Given a completion that called the answer tool; When its reply text is taken; Then it is the arguments
    completion = Completion(tool_calls=[ToolCall(id="c", name=STRUCTURED_TOOL_NAME, arguments={"city": "Oslo"})])
    assert json.loads(reply_text(completion)) == {"city": "Oslo"}


def test_the_reply_of_a_forced_tool_call_with_undecodable_arguments_is_the_raw_text() -> None:
    # Given a call whose arguments the provider could not decode; When its reply is taken; Then it is the raw text
    completion = Completion(tool_calls=[ToolCall(id="c", name=STRUCTURED_TOOL_NAME, arguments={"_raw": "{city:"})])
    assert reply_text(completion) == "{city:"


def test_formatting_replies_are_split_from_the_conversation() -> None:
    # Given a final iteration with the answer and two stored formatting replies
    messages = [
        stored("user", "Q", 0, 0),
        stored("assistant", "A", 1, 0),
        stored("assistant", '{"x": 1}', 1, observation_slot(64)),
        stored("assistant", '{"x": 2}', 1, observation_slot(65)),
    ]
    # When they are split
    conversation, replies = split_formatting_replies(messages, 1)
    # Then the conversation ends with the answer and the replies are keyed by attempt
    assert [m.content for m in conversation] == ["Q", "A"]
    assert replies == {0: '{"x": 1}', 1: '{"x": 2}'}
