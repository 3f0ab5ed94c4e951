"""What a model thought is never read as its reply, whatever the protocol."""

from __future__ import annotations

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ReasoningBlock, ToolCall, ToolSpec
from stepwise.protocols import get_protocol, parse_completion
from stepwise.protocols.reading import REASONING_ONLY

TOOLS = [
    ToolSpec(name="search", parameters={"type": "object", "properties": {"query": {"type": "string"}}}),
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
]
# Every decoy a protocol could read: an action line, a JSON action, an XML tool tag, markers, a final answer.
DECOYS = (
    '<think>Maybe search? Action: search\nAction Input: {"query": "decoy"}\n'
    '```json\n{"action": "search", "action_input": {"query": "decoy"}}\n```\n'
    '<action>search(query="decoy")</action> /*ACTION*/ {"tool": "search", "parameters": {}} /*END_ACTION*/\n'
    "Final Answer: the decoy answer\n<final_answer>decoy</final_answer></think>\n"
)
WEATHER_CALLS = {
    "react_text": 'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}',
    "react_json": '```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
    "xml": '<action>get_weather(city="Paris")</action>',
    "markers": '/*ACTION*/ {"tool": "get_weather", "parameters": {"city": "Paris"}} /*END_ACTION*/',
}
ANSWERS = {
    "react_text": "Thought: I know it.\nFinal Answer: 14 degrees.",
    "react_json": '```json\n{"action": "Final Answer", "action_input": "14 degrees."}\n```',
    "xml": "<final_answer>14 degrees.</final_answer>",
    "markers": "/*FINAL_ANSWER*/ 14 degrees. /*END_FINAL_ANSWER*/",
    "function_calling": "14 degrees.",
}


@pytest.mark.parametrize("protocol", list(WEATHER_CALLS))
def test_a_call_after_a_think_block_full_of_decoys_is_the_only_call_read(protocol: str) -> None:
    # Given a reply whose think block holds an action of every protocol, then the real call
    decision = parse_completion(DECOYS + WEATHER_CALLS[protocol], protocol, TOOLS)
    # Then only the real call is read, with no note of other actions
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("get_weather", {"city": "Paris"})]
    assert "decoy" not in decision.thought and not decision.note


@pytest.mark.parametrize("protocol", list(ANSWERS))
def test_an_answer_after_a_think_block_full_of_decoys_holds_none_of_the_think_text(protocol: str) -> None:
    # Given a reply whose think block holds decoy actions and answers, then the real answer
    decision = parse_completion(DECOYS + ANSWERS[protocol], protocol, TOOLS)
    # Then the answer is the real one
    assert isinstance(decision, FinalAnswer)
    assert decision.text == "14 degrees." and "decoy" not in decision.thought


def test_a_native_tool_call_keeps_its_text_but_not_its_thinking_as_the_thought() -> None:
    # Given a native tool call whose text opens with a think block naming another tool
    completion = Completion(
        content="<think>Action: search</think>Checking Paris.",
        tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})],
    )
    # When it is parsed natively
    decision = get_protocol("function_calling").parse(completion, TOOLS)
    # Then the call is read, and the thought is the text after the thinking
    assert isinstance(decision, ToolCalls)
    assert (decision.calls[0].name, decision.thought) == ("get_weather", "Checking Paris.")


@pytest.mark.parametrize("protocol", [*WEATHER_CALLS, "function_calling"])
def test_a_reply_that_is_only_reasoning_asks_for_the_decision_after_it(protocol: str) -> None:
    # Given a reply cut off while the model was still thinking
    decision = parse_completion("<think>Let me weigh Action: search against", protocol, TOOLS)
    # Then it is a parse error saying the reply held only reasoning
    assert decision == ParseError(message=REASONING_ONLY)


def test_a_stored_reply_whose_reasoning_was_kept_apart_is_read_the_same() -> None:
    # Given the message as the store keeps it: no text, the reasoning in its own field
    completion = Completion(content="", reasoning=[ReasoningBlock(text="Action: search")])
    # When it is parsed
    decision = get_protocol("react_text").parse(completion, TOOLS)
    # Then the reasoning is not read, and the model is asked for its decision
    assert decision == ParseError(message=REASONING_ONLY)


@pytest.mark.parametrize("protocol", list(WEATHER_CALLS))
def test_plain_prose_after_reasoning_is_the_answer(protocol: str) -> None:
    # Given a reasoning model that thought, then answered without the protocol's format
    decision = parse_completion("<think>Paris is rainy today.</think>\n\nIt is 14 degrees in Paris.", protocol, TOOLS)
    # Then the prose is its final answer
    assert decision == FinalAnswer(text="It is 14 degrees in Paris.")


@pytest.mark.parametrize("protocol", ["react_text", "react_json", "xml"])
def test_plain_prose_without_reasoning_is_still_a_format_error(protocol: str) -> None:
    # Given a model that ignored the format and did not reason / When it is parsed
    decision = parse_completion("It is 14 degrees in Paris.", protocol, TOOLS)
    # Then the model is told what is missing
    assert isinstance(decision, ParseError)


def test_an_announcement_after_reasoning_is_not_an_answer() -> None:
    # Given a model that thought and then only said what it will do
    decision = parse_completion("<think>Weather tool.</think>I will look up the weather now.", "react_text", TOOLS)
    # Then it is asked for the action, not taken at its word
    assert isinstance(decision, ParseError)


def test_auto_detection_reads_the_reply_not_the_reasoning() -> None:
    # Given a plain answer after a think block holding XML and marker decoys
    decision = parse_completion(DECOYS + "It is 14 degrees.", "auto", TOOLS)
    # Then the reply is read as the plain final answer it is
    assert decision == FinalAnswer(text="It is 14 degrees.")


def test_reasoning_fields_of_a_provider_envelope_are_never_the_answer() -> None:
    # Given a DeepSeek chat.completion whose reasoning_content names a tool and whose content is the answer
    response = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "14 degrees.",
                    "reasoning_content": "Action: search\nAction Input: decoy",
                }
            }
        ]
    }
    # When it is read with the text protocol
    decision = parse_completion(response, "react_text", TOOLS)
    # Then the content, answered after reasoning, is the final answer
    assert decision == FinalAnswer(text="14 degrees.")
