"""parse_completion in auto mode: the protocol is detected from what the model wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolCall
from stepwise.protocols import detect_protocol, parse_completion


@pytest.mark.parametrize(
    ("sample", "protocol"),
    [
        ("react_json/fenced_with_language.txt", "react_json"),
        ("react_text/tool_call.txt", "react_text"),
        ("react_text/chinese_keywords.txt", "react_text"),
        ("xml/named_arguments.txt", "xml"),
        ("markers/planning_and_action.txt", "markers"),
        ("react_text/no_keywords.txt", None),
    ],
)
def test_protocol_is_detected_from_the_text(
    read_sample: Callable[[str], str], sample: str, protocol: str | None
) -> None:
    # Given a sample written in one protocol / When detected / Then that protocol (None for plain text)
    assert detect_protocol(Completion(content=read_sample(sample))) == protocol


def test_native_tool_calls_are_detected_first() -> None:
    # Given native calls next to text that looks like react_text / When detected / Then function_calling
    completion = Completion(content="Action: search", tool_calls=[ToolCall(id="t", name="get_time")])
    assert detect_protocol(completion) == "function_calling"


def test_keyword_lines_before_a_json_block_are_react_text() -> None:
    # Given a Final Answer line whose answer holds a JSON action example / When parsed in auto mode
    text = 'Final Answer: call it like this:\n```json\n{"action": "search", "action_input": "x"}\n```'
    decision = parse_completion(text)
    # Then the earlier keyword wins: it is the final answer, example included
    assert isinstance(decision, FinalAnswer)
    assert decision.text.startswith("call it like this:")


def test_auto_reads_a_react_json_tool_call(read_sample: Callable[[str], str]) -> None:
    # Given a react_json sample / When parsed in auto mode / Then it is that call
    decision = parse_completion(read_sample("react_json/fenced_with_language.txt"))
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"city": "Paris", "unit": "celsius"}


def test_auto_reads_an_xml_final_answer(read_sample: Callable[[str], str]) -> None:
    # Given an xml final answer / When parsed in auto mode / Then it is the answer
    decision = parse_completion(read_sample("xml/unclosed_final_answer.txt"))
    assert isinstance(decision, FinalAnswer)
    assert decision.text == "The Louvre opens at 9am and closes at 6pm."


def test_auto_reads_native_calls_from_a_provider_response(read_response: Callable[[str], dict[str, Any]]) -> None:
    # Given an Anthropic response with tool_use blocks / When parsed in auto mode / Then the native calls
    decision = parse_completion(read_response("anthropic_tool_use.json"))
    assert isinstance(decision, ToolCalls)
    assert len(decision.calls) == 2


def test_plain_text_is_a_final_answer() -> None:
    # Given text in no protocol / When parsed in auto mode / Then it is the answer
    assert parse_completion("Paris is the capital of France.") == FinalAnswer(text="Paris is the capital of France.")


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_a_parse_error(text: str) -> None:
    # Given empty output / When parsed in auto mode / Then it is a parse error
    assert isinstance(parse_completion(text), ParseError)


def test_tools_given_as_provider_dicts_name_a_bare_input() -> None:
    # Given tools in OpenAI, Anthropic and Bedrock shapes and a bare-string input / When parsed
    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": "search", "parameters": {"required": ["query"]}}},
        {"name": "lookup", "input_schema": {"required": ["key"]}},
        {"toolSpec": {"name": "fetch", "inputSchema": {"json": {"required": ["url"]}}}},
        {"not": "a tool"},
    ]
    decisions = [
        parse_completion(f'```json\n{{"action": "{name}", "action_input": "v"}}\n```', "react_json", tools)
        for name in ("search", "lookup", "fetch")
    ]
    # Then each input goes under that tool's required parameter, and the unreadable tool is skipped
    assert [d.calls[0].arguments for d in decisions if isinstance(d, ToolCalls)] == [
        {"query": "v"},
        {"key": "v"},
        {"url": "v"},
    ]


def test_an_explicit_protocol_is_used_without_detection() -> None:
    # Given react_text lines parsed as xml / When parsed / Then xml's parse error, not a react_text call
    decision = parse_completion("Action: search\nAction Input: x", "xml")
    assert isinstance(decision, ParseError)


def test_an_unknown_protocol_is_a_parse_error() -> None:
    # Given a protocol name that does not exist / When parsed / Then a parse error, not an exception
    assert parse_completion("hello", "yaml") == ParseError(message="Unknown protocol 'yaml'.")
