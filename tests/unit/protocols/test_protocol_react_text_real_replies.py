"""ReAct text as real models write it when they stray: broken inputs, fences, one-line labels, repeats, wrappers."""

from __future__ import annotations

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import ToolSpec
from stepwise.protocols import parse_completion

SEARCH = ToolSpec(
    name="search",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def read(text: str, protocol: str = "react_text") -> object:
    return parse_completion(text, protocol, [SEARCH])


def call_of(decision: object) -> tuple[str, dict[str, object]]:
    assert isinstance(decision, ToolCalls), decision
    return decision.calls[0].name, decision.calls[0].arguments


def test_an_input_cut_off_after_a_complete_value_is_closed() -> None:
    # Given an Action Input whose closing brace was cut off after a whole string value
    decision = read('Thought: search it\nAction: search\nAction Input: {"query": "temperature in SF"')
    # Then the one reading there is, is taken
    assert call_of(decision) == ("search", {"query": "temperature in SF"})


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ('{"query": "temperature in', "cut off"),
        ('{"query": "SF", "limit": 1', "cut off"),
        ('{"query": "SF" "limit": }', "not valid JSON"),
    ],
)
def test_an_input_that_cannot_be_read_without_guessing_is_an_error_naming_the_problem(tail: str, problem: str) -> None:
    # Given an Action Input cut inside a value, or broken
    decision = read(f"Thought: search it\nAction: search\nAction Input: {tail}")
    # Then it is never passed on as text: the model is told what is wrong
    assert isinstance(decision, ParseError)
    assert "Action Input" in decision.message and problem in decision.message


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("```\nThought: I know.\nFinal Answer: 42\n```", "42"),
        ("```text\nThought: I know.\nFinal Answer: It is 42.\n```\n", "It is 42."),
        ("Thought: I know.\nFinal Answer: 42\n```", "42"),
    ],
)
def test_a_fence_around_the_whole_reply_is_not_part_of_the_answer(text: str, answer: str) -> None:
    # Given a reply wrapped in a code fence (or ending with a fence's closing line) / When it is read
    decision = read(text)
    # Then the answer holds no fence
    assert decision == FinalAnswer(text=answer, thought="I know.")


def test_an_answer_that_holds_a_code_block_keeps_it() -> None:
    # Given a final answer that is code in a fence
    decision = read("Thought: here it is\nFinal Answer: Use this:\n```python\nprint(42)\n```")
    # Then the fence stays in the answer
    assert isinstance(decision, FinalAnswer) and decision.text.endswith("print(42)\n```")


def test_a_fenced_action_reply_calls_the_tool() -> None:
    # Given a whole action reply in a fence
    decision = read('```\nThought: look\nAction: search\nAction Input: {"query": "SF"}\n```')
    # Then the call is read
    assert call_of(decision) == ("search", {"query": "SF"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: I now know the final answer. Final Answer: 42",
            FinalAnswer(text="42", thought="I now know the final answer."),
        ),
        ('Thought: I should look. Action: search Action Input: {"query": "SF"}', ("search", {"query": "SF"})),
    ],
)
def test_labels_written_on_one_line_are_read(text: str, expected: object) -> None:
    # Given a reply with its labels on one line / When it is read
    decision = read(text)
    # Then the decision is read as if each label opened a line
    assert (decision if isinstance(expected, FinalAnswer) else call_of(decision)) == expected


def test_a_repeated_reply_gives_one_answer_without_protocol_text() -> None:
    # Given a model that wrote its Thought and Final Answer twice
    decision = read("Thought: I know.\nFinal Answer: 42\n\nThought: I know.\nFinal Answer: 42")
    # Then the answer is said once, without the labels
    assert decision == FinalAnswer(text="42", thought="I know.")


def test_a_corrected_final_answer_is_the_last_one() -> None:
    # Given a model that answered, thought again and answered otherwise
    decision = read("Thought: easy\nFinal Answer: 40\nThought: wait, I misread.\nFinal Answer: 42")
    # Then the last answer is taken
    assert isinstance(decision, FinalAnswer) and decision.text == "42"


@pytest.mark.parametrize(
    "text",
    [
        # run-llama/llama_index issue #12455: the input as a call's argument
        'Thought: I need to use a tool to help me answer the question.\nAction: search ({"input": "weather in SF"})',
        # LlamaIndex FunctionTool's single-input key
        'Thought: I need to use a tool.\nAction: search\nAction Input: {"input": "weather in SF"}',
        # the tool's schema echoed around the arguments
        'Thought: I need to use a tool.\nAction: search\nAction Input: {"properties": {"query": "weather in SF"}}',
        # LangChain's single-input argument name
        'Thought: I need to use a tool.\nAction: search\nAction Input: {"__arg1": "weather in SF"}',
    ],
)
def test_wrapped_tool_inputs_are_unwrapped_to_the_tools_parameter(text: str) -> None:
    # Given arguments wrapped in a key the tool does not have / When they are read
    decision = read(text)
    # Then they reach the tool under its own parameter
    assert call_of(decision) == ("search", {"query": "weather in SF"})


def test_an_argument_named_after_a_parameter_is_never_unwrapped() -> None:
    # Given a tool that does take an `input` parameter
    tool = ToolSpec(name="echo", parameters={"type": "object", "properties": {"input": {"type": "string"}}})
    # When a call passes it
    decision = parse_completion('Action: echo\nAction Input: {"input": "hi"}', "react_text", [tool])
    # Then it stays as written
    assert call_of(decision) == ("echo", {"input": "hi"})


@pytest.mark.parametrize("input_text", ['query="weather in SF"', "query: weather in SF", "query = 'weather in SF'"])
def test_an_input_written_as_named_arguments_reaches_the_named_parameter(input_text: str) -> None:
    # Given arguments named like a call's or a YAML line's, the name being the tool's parameter
    decision = read(f"Thought: look it up\nAction: search\nAction Input: {input_text}")
    # Then the parameter gets the value alone
    assert call_of(decision) == ("search", {"query": "weather in SF"})


def test_a_colon_in_a_plain_input_is_not_a_parameter_name() -> None:
    # Given a plain question that holds a colon / When it is read / Then it is the value as written
    assert call_of(read("Action: search\nAction Input: ratio 3:2 screens")) == (
        "search",
        {"query": "ratio 3:2 screens"},
    )


def test_a_tool_name_in_a_fence_of_its_own_is_the_tool() -> None:
    # Given the action's name and its input each in a fence
    decision = read('Thought: search.\nAction:\n```\nsearch\n```\nAction Input:\n```json\n{"query": "SF"}\n```')
    # Then the call is read
    assert call_of(decision) == ("search", {"query": "SF"})
