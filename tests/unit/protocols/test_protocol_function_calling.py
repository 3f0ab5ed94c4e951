"""Parsing native tool calls: Completion objects and OpenAI, Bedrock and Anthropic response dicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolCall, ToolSpec
from stepwise.protocols import TEXT_PROTOCOLS, ProtocolName, get_protocol, parse_completion
from stepwise.protocols.provider_responses import completion_from_response

Response = Callable[[str], dict[str, Any]]


def test_openai_arguments_json_string_is_decoded(read_response: Response) -> None:
    # Given an OpenAI chat.completion with one tool call, arguments as a JSON string
    response = read_response("openai_tool_call.json")
    # When parsed as function_calling
    decision = parse_completion(response, "function_calling")
    # Then the provider's id is kept and the arguments are an object
    assert isinstance(decision, ToolCalls)
    assert [call.model_dump() for call in decision.calls] == [
        {"id": "call_Q5vX8pLmN2kR7tY1", "name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
    ]


def test_openai_parallel_tool_calls_are_all_kept_with_text_as_thought(read_response: Response) -> None:
    # Given three tool calls and some text in one OpenAI response / When parsed
    decision = parse_completion(read_response("openai_parallel_tool_calls.json"), "function_calling")
    # Then all calls are there in order, the text is the thought
    assert isinstance(decision, ToolCalls)
    assert [(c.id, c.name, c.arguments) for c in decision.calls] == [
        ("call_paris01", "get_weather", {"city": "Paris"}),
        ("call_london02", "get_weather", {"city": "London"}),
        ("call_time03", "get_time", {}),
    ]
    assert decision.thought == "I'll check both cities at once."


def test_openai_malformed_arguments_are_a_parse_error_naming_the_tool(read_response: Response) -> None:
    # Given arguments cut off in the middle of the JSON / When parsed
    decision = parse_completion(read_response("openai_malformed_arguments.json"), "function_calling")
    # Then the error names the tool
    assert isinstance(decision, ParseError)
    assert '"get_weather"' in decision.message and "not a valid JSON object" in decision.message


def test_openai_text_only_is_a_final_answer(read_response: Response) -> None:
    # Given an OpenAI response with text and no tool calls / When parsed / Then the text is the answer
    decision = parse_completion(read_response("openai_text_only.json"), "function_calling")
    assert decision == FinalAnswer(text="It is 21°C and sunny in Paris.")


def test_bedrock_tool_use_input_object(read_response: Response) -> None:
    # Given a Bedrock Converse response with a text block and a toolUse block / When parsed
    decision = parse_completion(read_response("bedrock_tool_use.json"), "function_calling")
    # Then the toolUse becomes the call (its id kept) and the text the thought
    assert isinstance(decision, ToolCalls)
    assert decision.calls == [
        ToolCall(
            id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name="get_weather", arguments={"city": "Paris", "unit": "celsius"}
        )
    ]
    assert decision.thought == "I'll look up the weather in Paris."


def test_bedrock_text_only_is_a_final_answer(read_response: Response) -> None:
    # Given a Bedrock Converse response with text only / When parsed / Then it is the final answer
    decision = parse_completion(read_response("bedrock_text_only.json"), "function_calling")
    assert decision == FinalAnswer(text="It is 21°C and sunny in Paris.")


def test_anthropic_parallel_tool_use(read_response: Response) -> None:
    # Given an Anthropic message with text and two tool_use blocks / When parsed
    decision = parse_completion(read_response("anthropic_tool_use.json"), "function_calling")
    # Then both calls are kept, with their ids, and the text is the thought
    assert isinstance(decision, ToolCalls)
    assert [(c.id, c.arguments) for c in decision.calls] == [
        ("toolu_01A09q90qw90lq917835lq9", {"city": "Paris"}),
        ("toolu_01B18r81rx81mr826724mr8", {"city": "London"}),
    ]
    assert decision.thought == "I'll check the weather in both cities."


def test_anthropic_text_only_is_a_final_answer(read_response: Response) -> None:
    # Given an Anthropic message with one text block / When parsed / Then it is the final answer
    decision = parse_completion(read_response("anthropic_text_only.json"), "function_calling")
    assert decision == FinalAnswer(text="It is 21°C and sunny in Paris.")


def test_undecodable_arguments_kept_by_the_provider_are_a_parse_error_naming_the_tool() -> None:
    # Given a Completion whose call kept its unreadable arguments under "_raw" (as the OpenAI provider does)
    completion = Completion(tool_calls=[ToolCall(id="c1", name="search", arguments={"_raw": '{"query": '})])
    # When parsed / Then the error names the tool
    decision = get_protocol("function_calling").parse(completion)
    assert isinstance(decision, ParseError)
    assert '"search"' in decision.message


def test_raw_arguments_that_are_only_lenient_json_are_read() -> None:
    # Given "_raw" arguments with single quotes and a trailing comma / When parsed
    completion = Completion(tool_calls=[ToolCall(id="c1", name="search", arguments={"_raw": "{'query': 'x',}"})])
    decision = get_protocol("function_calling").parse(completion)
    # Then the lenient reader recovers them
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"query": "x"}


def test_tool_calls_win_over_text() -> None:
    # Given a completion with both a final-sounding text and a tool call / When parsed
    completion = Completion(
        content="Final Answer: probably sunny", tool_calls=[ToolCall(id="c1", name="get_time", arguments={})]
    )
    decision = get_protocol("function_calling").parse(completion)
    # Then the call wins and the text is the thought
    assert decision == ToolCalls(calls=completion.tool_calls, thought="Final Answer: probably sunny")


def test_text_with_a_react_block_is_still_a_final_answer() -> None:
    # Given a native completion whose text looks like a ReAct action block / When parsed as function_calling
    text = 'Thought: x\n```json\n{"action": "search", "action_input": {"query": "y"}}\n```'
    decision = get_protocol("function_calling").parse(Completion(content=text))
    # Then no protocol detection happens: the text is the answer
    assert decision == FinalAnswer(text=text)


def test_empty_completion_is_a_parse_error() -> None:
    # Given a completion with no text and no calls / When parsed / Then it is a parse error
    decision = get_protocol("function_calling").parse(Completion(content="  "))
    assert decision == ParseError(message="Your reply was empty.")


def test_tool_name_case_is_fixed_from_the_tool_list(tools: list[ToolSpec]) -> None:
    # Given a call naming a known tool in the wrong case / When parsed with the tools
    completion = Completion(tool_calls=[ToolCall(id="c1", name="GET_WEATHER", arguments={"city": "Oslo"})])
    decision = get_protocol("function_calling").parse(completion, tools)
    # Then the call uses the tool's real name
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].name == "get_weather"


@pytest.mark.parametrize("name", TEXT_PROTOCOLS)
def test_text_protocols_take_native_calls_a_provider_sent_anyway(name: ProtocolName) -> None:
    # Given a completion with native calls while a text protocol is in use / When parsed
    completion = Completion(tool_calls=[ToolCall(id="toolu_1", name="get_time", arguments={})])
    decision = get_protocol(name).parse(completion)
    # Then the calls are taken as they are, ids kept
    assert decision == ToolCalls(calls=completion.tool_calls)


def test_missing_provider_ids_are_generated_in_order() -> None:
    # Given an OpenAI-style message whose calls have no ids / When parsed
    message = {
        "content": None,
        "tool_calls": [
            {"function": {"name": "get_time", "arguments": ""}},
            {"function": {"name": "search", "arguments": '{"query": "x"}'}},
        ],
    }
    decision = parse_completion(message, "function_calling")
    # Then ids are the default prefix and the position
    assert isinstance(decision, ToolCalls)
    assert [call.id for call in decision.calls] == ["call_0", "call_1"]


def test_a_call_without_a_name_is_dropped_and_the_others_kept() -> None:
    # Given a Bedrock reply with a nameless toolUse beside a named one (trpc-agent filters the same way)
    blocks = [
        {"toolUse": {"toolUseId": "t1", "input": {}}},
        {"toolUse": {"toolUseId": "t2", "name": "get_time", "input": {}}},
    ]
    response = {"output": {"message": {"content": blocks}}}
    # When parsed / Then only the named call is left
    decision = parse_completion(response, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [(call.id, call.name) for call in decision.calls] == [("t2", "get_time")]


def test_an_unknown_response_shape_is_a_parse_error() -> None:
    # Given a dict that is no provider response / When parsed / Then it is a parse error
    decision = parse_completion({"status": "ok"}, "function_calling")
    assert decision == ParseError(message="The response is not in a known provider format.")


def test_a_responses_api_function_call_is_a_call_named_by_its_call_id() -> None:
    # Given an OpenAI Responses API response: a reasoning item, then a function_call item
    response = {
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Weather tool."}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Lyon"}',
            },
        ],
    }
    # When parsed / Then the call keeps the id its result must answer, and the reasoning is no thought of the reply
    decision = parse_completion(response, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [call.model_dump() for call in decision.calls] == [
        {"id": "call_1", "name": "get_weather", "arguments": {"city": "Lyon"}}
    ]
    assert decision.thought == ""


def test_responses_api_messages_are_the_answer_and_server_tool_items_are_recorded() -> None:
    # Given a Responses API response: a web search OpenAI ran, then two messages
    response = {
        "object": "response",
        "output": [
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Take a hat."}]},
        ],
    }
    # When read / Then the messages are the answer, a paragraph apart, and the search is recorded, not called
    read = completion_from_response(response)
    assert isinstance(read, Completion)
    assert (read.content, read.tool_calls, read.server_tools) == ("It is sunny.\n\nTake a hat.", [], ["web_search"])


def test_an_ollama_generate_response_is_read_with_its_thinking_apart() -> None:
    # Given Ollama's /api/generate response with thinking / When read
    read = completion_from_response({"model": "m", "response": "Paris.", "thinking": "The capital.", "done": True})
    # Then the response is the text and the thinking its reasoning
    assert isinstance(read, Completion)
    assert (read.content, [block.text for block in read.reasoning]) == ("Paris.", ["The capital."])


def test_anthropic_server_and_mcp_tool_blocks_are_recorded_not_called() -> None:
    # Given an Anthropic reply holding a web search and an MCP tool Anthropic ran, their results, then text
    response = {
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "s", "input": {}},
            {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": []},
            {"type": "text", "text": "Done."},
        ]
    }
    # When read / Then nothing is to be called and both tools are recorded as the provider's own
    read = completion_from_response(response)
    assert isinstance(read, Completion)
    assert (read.content, read.tool_calls, read.server_tools) == ("Done.", [], ["web_search", "lookup"])


@pytest.mark.parametrize(
    "body",
    [
        {"id": "cmpl-1", "object": "text_completion", "choices": [{"text": "Paris.", "index": 0}]},
        {"completion": " Paris.", "stop_reason": "stop_sequence"},
        {"results": [{"outputText": "Paris.", "completionReason": "FINISH"}]},
        {"generation": "Paris.", "stop_reason": "stop"},
        {"outputs": [{"text": "Paris.", "stop_reason": "stop"}]},
        {"generations": [{"text": "Paris.", "finish_reason": "COMPLETE"}]},
        {"completions": [{"data": {"text": "Paris."}}]},
        {"generated_text": "Paris.", "details": {}},
        {"results": [{"generated_text": "Paris.", "stop_reason": "eos_token"}]},
        {"result": {"response": "Paris."}, "success": True},
        {"status": "succeeded", "output": ["Par", "is."]},
    ],
    ids=[
        "openai_completions",
        "anthropic_text",
        "titan",
        "llama",
        "mistral",
        "cohere_generate",
        "ai21",
        "tgi",
        "watsonx",
        "cloudflare",
        "replicate",
    ],
)
def test_text_only_completion_bodies_are_the_answer(body: dict[str, Any]) -> None:
    # Given the body of a completion API that answers with text alone / When parsed
    decision = parse_completion(body, "function_calling")
    # Then its text is the final answer
    assert decision == FinalAnswer(text="Paris.")


def test_cohere_v1_call_arguments_named_parameters_are_read() -> None:
    # Given Cohere's chat v1 reply: its text and a call whose arguments are under "parameters"
    response = {"text": "I will look it up.", "tool_calls": [{"name": "get_weather", "parameters": {"city": "Lyon"}}]}
    # When parsed / Then the call keeps its arguments and the text is its thought
    decision = parse_completion(response, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert (decision.calls[0].arguments, decision.thought) == ({"city": "Lyon"}, "I will look it up.")


def test_cohere_v2_tool_plan_is_the_thought_of_its_calls() -> None:
    # Given Cohere's chat v2 reply: no text, a tool_plan beside a call
    message = {
        "role": "assistant",
        "tool_plan": "Check the weather first.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    }
    # When parsed / Then the plan is the call's thought
    decision = parse_completion({"message": message}, "function_calling")
    assert isinstance(decision, ToolCalls) and decision.thought == "Check the weather first."


def test_a_call_whose_arguments_are_the_string_null_takes_no_arguments() -> None:
    # Given a Cohere v2 reply calling a tool without parameters, its arguments written as "null"
    body = {
        "message": {
            "role": "assistant",
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "currentTime", "arguments": "null"}}],
        },
        "finish_reason": "TOOL_CALL",
    }
    # When it is parsed / Then it is the call, with no arguments
    decision = parse_completion(body, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("currentTime", {})]


def test_calls_inside_openais_parallel_wrapper_are_calls_of_their_own() -> None:
    # Given a chat completion whose one call is OpenAI's internal multi_tool_use.parallel wrapper of two calls
    uses = [
        {"recipient_name": "functions.get_weather", "parameters": {"city": "Paris"}},
        {"recipient_name": "functions.get_weather", "parameters": {"city": "Rome"}},
    ]
    wrapper = {"name": "multi_tool_use.parallel", "arguments": json.dumps({"tool_uses": uses})}
    call = {"id": "c1", "type": "function", "function": wrapper}
    body = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
    # When it is parsed
    decision = parse_completion(body, "function_calling")
    # Then each call inside is one to make, with an id of its own
    assert isinstance(decision, ToolCalls)
    assert [(c.id, c.name, c.arguments) for c in decision.calls] == [
        ("c1_0", "get_weather", {"city": "Paris"}),
        ("c1_1", "get_weather", {"city": "Rome"}),
    ]
