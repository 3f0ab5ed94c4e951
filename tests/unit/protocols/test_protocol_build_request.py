"""Building requests: tools in the prompt or native, history rendering, stop sequences, final round."""

from __future__ import annotations

import json

import pytest

from stepwise.models.decision import ParseError, ToolCalls
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolCall, ToolSpec
from stepwise.protocols import TEXT_PROTOCOLS, ProtocolName, get_protocol

SYSTEM = "You are a helpful travel assistant."
WEATHER_CALL = ToolCall(id="call_0", name="get_weather", arguments={"city": "Paris"})


def history() -> list[ChatMessage]:
    """A question, a call the model wrote in react_json, and the tool's result."""
    return [
        ChatMessage(role="user", content="What is the weather in Paris?"),
        ChatMessage(
            role="assistant",
            content='Thought: check\n```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
            tool_calls=[WEATHER_CALL],
        ),
        ChatMessage(role="tool", tool_call_id="call_0", name="get_weather", content='{"temp": 21}'),
    ]


def build(
    name: ProtocolName, tools: list[ToolSpec], *, final_round: bool = False, messages: list[ChatMessage] | None = None
) -> ChatRequest:
    return get_protocol(name).build_request(
        system_prompt=SYSTEM,
        history=history() if messages is None else messages,
        tools=tools,
        final_round=final_round,
        tool_choice="auto",
        parallel_tool_calls=True,
        max_tokens=512,
        temperature=0.2,
    )


@pytest.mark.parametrize("name", TEXT_PROTOCOLS)
def test_text_protocols_list_tools_and_format_in_the_system_prompt(name: ProtocolName, tools: list[ToolSpec]) -> None:
    # Given a text protocol and tools / When a request is built
    request = build(name, tools)
    system = request.messages[0]
    # Then the system prompt holds the profile prompt, each tool with its schema and the format;
    # no tools travel natively
    assert system.role == "system" and system.content.startswith(SYSTEM)
    for tool in tools:
        assert f"- {tool.name}: {tool.description}" in system.content
        assert json.dumps(tool.parameters) in system.content
    assert get_protocol(name).wording.tool_format in system.content
    assert request.tools == [] and request.tool_choice is None and request.parallel_tool_calls is None


@pytest.mark.parametrize(
    ("name", "stop"),
    [
        ("react_json", "\nObservation:"),
        ("react_text", "\nObservation:"),
        ("xml", "<observation>"),
        ("markers", "\nObservation:"),
    ],
)
def test_text_protocols_stop_before_the_observation(name: ProtocolName, stop: str, tools: list[ToolSpec]) -> None:
    # Given a text protocol / When a request is built / Then it stops where an observation would start
    assert stop in build(name, tools).stop


def test_function_calling_passes_tools_and_options_natively(tools: list[ToolSpec]) -> None:
    # Given function_calling / When a request is built
    request = build("function_calling", tools)
    # Then tools, tool_choice and parallel_tool_calls are passed through, the prompt is untouched
    assert request.tools == tools
    assert (request.tool_choice, request.parallel_tool_calls) == ("auto", True)
    assert request.messages[0] == ChatMessage(role="system", content=SYSTEM)
    assert request.stop == []


def test_function_calling_keeps_tool_messages(tools: list[ToolSpec]) -> None:
    # Given a history with a native call and its tool result / When a request is built
    request = build("function_calling", tools)
    # Then the history is passed as is after the system prompt
    assert request.messages[1:] == history()


@pytest.mark.parametrize("name", [*TEXT_PROTOCOLS, "function_calling"])
def test_sampling_options_are_passed_through(name: ProtocolName, tools: list[ToolSpec]) -> None:
    # Given max_tokens and temperature / When a request is built / Then they are in the request
    request = build(name, tools)
    assert (request.max_tokens, request.temperature) == (512, 0.2)


@pytest.mark.parametrize("name", ["react_json", "react_text", "markers"])
def test_tool_results_become_observation_user_messages(name: ProtocolName, tools: list[ToolSpec]) -> None:
    # Given a history ending with a tool result / When a text protocol builds the request
    request = build(name, tools)
    # Then the result is a user message starting with "Observation:" and no tool role remains
    assert request.messages[-1] == ChatMessage(role="user", content='Observation: {"temp": 21}')
    assert all(message.role != "tool" for message in request.messages)


def test_xml_renders_tool_results_as_observation_tags(tools: list[ToolSpec]) -> None:
    # Given a history ending with a tool result / When xml builds the request / Then it is an <observation>
    request = build("xml", tools)
    assert request.messages[-1] == ChatMessage(role="user", content='<observation>{"temp": 21}</observation>')


def test_assistant_calls_are_rendered_as_the_text_the_model_wrote(tools: list[ToolSpec]) -> None:
    # Given an assistant call stored with the text the model wrote / When a request is built
    request = build("react_json", tools)
    # Then that text is the assistant message, without native tool calls
    assert request.messages[2] == ChatMessage(role="assistant", content=history()[1].content)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("react_json", '```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```'),
        ("react_text", 'Action: get_weather\nAction Input: {"city": "Paris"}'),
        ("xml", '<action>get_weather(city="Paris")</action>'),
        ("markers", '/*ACTION*/ {"tool": "get_weather", "parameters": {"city": "Paris"}} /*END_ACTION*/'),
    ],
)
def test_calls_without_stored_text_are_written_in_the_protocol_format(
    name: ProtocolName, expected: str, tools: list[ToolSpec]
) -> None:
    # Given an assistant call made natively (no text) / When a text protocol builds the request
    messages = [ChatMessage(role="user", content="Weather?"), ChatMessage(role="assistant", tool_calls=[WEATHER_CALL])]
    request = build(name, tools, messages=messages)
    # Then the call is written in that protocol's format, and parses back to the same call
    assert request.messages[-1] == ChatMessage(role="assistant", content=expected)
    decision = get_protocol(name).parse(Completion(content=expected), tools)
    assert isinstance(decision, ToolCalls)
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("get_weather", {"city": "Paris"})


def test_parallel_results_become_one_observation_message(tools: list[ToolSpec]) -> None:
    # Given two tool results in a row / When react_text builds the request
    messages = [
        ChatMessage(role="user", content="Weather in Paris and the time?"),
        ChatMessage(role="assistant", tool_calls=[WEATHER_CALL, ToolCall(id="call_1", name="get_time")]),
        ChatMessage(role="tool", tool_call_id="call_0", name="get_weather", content="sunny"),
        ChatMessage(role="tool", tool_call_id="call_1", name="get_time", content="12:00"),
    ]
    request = build("react_text", tools, messages=messages)
    # Then both are in one user message, each named after its tool
    assert request.messages[-1] == ChatMessage(
        role="user", content="Observation (get_weather): sunny\n\nObservation (get_time): 12:00"
    )


def test_a_user_message_after_an_observation_is_merged_into_it(tools: list[ToolSpec]) -> None:
    # Given a user message right after a tool result / When a text protocol builds the request
    messages = [*history(), ChatMessage(role="user", content="Also, is it windy?")]
    request = build("react_json", tools, messages=messages)
    # Then they form one user message, so roles keep alternating
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert request.messages[-1].content == 'Observation: {"temp": 21}\n\nAlso, is it windy?'


@pytest.mark.parametrize("name", TEXT_PROTOCOLS)
def test_final_round_offers_no_tools_and_orders_an_answer(name: ProtocolName, tools: list[ToolSpec]) -> None:
    # Given the final round / When a text protocol builds the request
    request = build(name, tools, final_round=True)
    wording = get_protocol(name).wording
    # Then no tool is listed, and the last message orders an answer now in the final-answer format
    assert request.tools == []
    assert all(tool.name not in request.messages[0].content for tool in tools)
    assert wording.tool_format not in request.messages[0].content
    last = request.messages[-1]
    assert last.role == "user"
    assert "Answer the original question now" in last.content and last.content.endswith(wording.final_format)


def test_final_round_with_function_calling_offers_no_tools(tools: list[ToolSpec]) -> None:
    # Given the final round / When function_calling builds the request
    request = build("function_calling", tools, final_round=True)
    # Then no tools or tool options are sent, the history is kept and an answer is ordered last
    assert (request.tools, request.tool_choice, request.parallel_tool_calls) == ([], None, None)
    assert request.messages[1:4] == history()
    assert request.messages[-1].role == "user"
    assert "Answer the original question now" in request.messages[-1].content


@pytest.mark.parametrize("name", [*TEXT_PROTOCOLS, "function_calling"])
def test_corrective_message_says_what_was_wrong_and_the_format(name: ProtocolName) -> None:
    # Given a parse error / When the corrective observation is made
    protocol = get_protocol(name)
    message = protocol.corrective_message(ParseError(message="Your reply has no JSON action block."))
    # Then it starts with the problem and shows the exact expected format
    assert message.startswith("Your reply has no JSON action block.")
    assert protocol.wording.tool_format in message
