"""Native calls a server without a tool-call parser leaves in the text are read as the calls they are."""

from __future__ import annotations

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import parse_completion
from stepwise.protocols.text_tool_calls import with_written_calls

TOOLS = [
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
    ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
]
HERMES = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
# vllm-project/vllm tests/reasoning/test_qwen3_reasoning_parser.py TOOL_CALL_BODY (Qwen3-Coder's markup)
QWEN3_CODER = (
    "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>"
)
MISTRAL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'


@pytest.mark.parametrize(
    ("text", "call"),
    [
        (HERMES, ("get_weather", {"city": "Paris"})),
        ("I need to read the file.\n\n" + QWEN3_CODER, ("bash", {"command": "cat /etc/hosts"})),
        (MISTRAL, ("get_weather", {"city": "Paris"})),
        ("<think>The weather tool.</think>\n" + HERMES, ("get_weather", {"city": "Paris"})),
    ],
)
def test_a_call_written_in_a_models_markup_is_a_tool_call(text: str, call: tuple[str, dict[str, str]]) -> None:
    # Given a native-tools reply whose call the server left in the text / When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is that call, not a final answer holding markup
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [call]


def test_the_text_before_the_markup_is_the_thought_and_the_stored_turn_gets_native_calls() -> None:
    # Given a reply with a remark, then a call in markup / When it is made native (as LLMCall stores it)
    native = with_written_calls(Completion(content=HERMES))
    # Then the remark is the text and the call is a native one
    assert native.content == "Let me check."
    assert [(call.id, call.name, call.arguments) for call in native.tool_calls] == [
        ("call_0", "get_weather", {"city": "Paris"})
    ]


def test_broken_arguments_in_markup_are_reported_not_answered() -> None:
    # Given a call whose arguments are not JSON / When it is parsed
    decision = parse_completion(
        '<tool_call>{"name": "get_weather", "arguments": "{city: "}</tool_call>', "function_calling", TOOLS
    )
    # Then the model is told the arguments could not be read
    assert isinstance(decision, ParseError) and "not a valid JSON object" in decision.message


def test_prose_that_names_the_markup_is_still_the_answer() -> None:
    # Given an answer that only talks about the tag / When it is parsed / Then it is the answer
    decision = parse_completion("Qwen wraps calls in <tool_call> tags.", "function_calling", TOOLS)
    assert decision == FinalAnswer(text="Qwen wraps calls in <tool_call> tags.")
