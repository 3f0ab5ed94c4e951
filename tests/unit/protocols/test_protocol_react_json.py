"""Parsing the react_json protocol: a JSON action block in whatever shape models write it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import get_protocol


def parse(text: str, tools: list[ToolSpec] | None = None, prefix: str = "call") -> Decision:
    return get_protocol("react_json").parse(Completion(content=text), tools, call_id_prefix=prefix)


def only_call(decision: Decision) -> ToolCalls:
    assert isinstance(decision, ToolCalls), decision
    assert len(decision.calls) == 1
    return decision


def test_fenced_block_with_language_tag(read_sample: Callable[[str], str], tools: list[ToolSpec]) -> None:
    # Given a thought and a ```json block
    text = read_sample("react_json/fenced_with_language.txt")
    # When parsed
    decision = only_call(parse(text, tools))
    # Then the call is read, with a deterministic id, and the thought is kept
    assert decision.calls[0].model_dump() == {
        "id": "call_0",
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "celsius"},
    }
    assert decision.thought == "The user wants the current weather in Paris, so I should call the weather tool."


def test_fenced_block_without_language_tag(read_sample: Callable[[str], str]) -> None:
    # Given a ``` block with no language tag / When parsed
    decision = only_call(parse(read_sample("react_json/fenced_without_language.txt")))
    # Then the call and its typed arguments are read
    assert decision.calls[0].name == "convert_currency"
    assert decision.calls[0].arguments == {"amount": 250, "from": "EUR", "to": "JPY"}


def test_prose_before_and_after_the_block(read_sample: Callable[[str], str]) -> None:
    # Given prose around the block / When parsed
    decision = only_call(parse(read_sample("react_json/prose_around.txt")))
    # Then the call is read and the prose before it is the thought
    assert decision.calls[0].arguments == {"query": "distance Paris to Tokyo in km"}
    assert decision.thought.startswith("Sure! To work out how long the flight takes")


def test_several_blocks_take_the_first_and_say_so(read_sample: Callable[[str], str]) -> None:
    # Given two action blocks / When parsed
    decision = only_call(parse(read_sample("react_json/two_blocks.txt")))
    # Then only the first call is made and the note says the rest were ignored
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "2 actions" in decision.note and "first" in decision.note


def test_action_input_as_json_string(read_sample: Callable[[str], str], tools: list[ToolSpec]) -> None:
    # Given action_input written as a string holding JSON / When parsed
    decision = only_call(parse(read_sample("react_json/input_as_json_string.txt"), tools))
    # Then the string is decoded into the arguments object
    assert decision.calls[0].arguments == {"query": "population of Lyon 2023", "limit": 3}


def test_plain_text_input_goes_to_the_only_required_parameter(
    read_sample: Callable[[str], str], tools: list[ToolSpec]
) -> None:
    # Given plain-text action_input and a tool whose only required parameter is "query" / When parsed
    decision = only_call(parse(read_sample("react_json/input_as_plain_text.txt"), tools))
    # Then the text is that parameter
    assert decision.calls[0].arguments == {"query": "population of Lyon 2023"}


def test_plain_text_input_without_tools_goes_to_input(read_sample: Callable[[str], str]) -> None:
    # Given plain-text action_input and no tool schemas / When parsed
    decision = only_call(parse(read_sample("react_json/input_as_plain_text.txt")))
    # Then the text is under "input"
    assert decision.calls[0].arguments == {"input": "population of Lyon 2023"}


def test_single_quotes_trailing_commas_unquoted_keys_and_python_literals(
    read_sample: Callable[[str], str],
) -> None:
    # Given a Python-flavoured block / When parsed
    decision = only_call(parse(read_sample("react_json/python_style.txt")))
    # Then the arguments keep JSON types: True/False/None became true/false/null
    assert decision.calls[0].name == "create_ticket"
    assert decision.calls[0].arguments == {
        "title": "Printer on floor 3 is jammed",
        "urgent": True,
        "assignee": None,
        "notify": False,
        "tags": ["hardware", "printer"],
    }


def test_keyword_case_variants_and_full_width_colon(read_sample: Callable[[str], str]) -> None:
    # Given "THOUGHT" with a full-width colon (U+FF1A) and "Action"/"Action Input" keys / When parsed
    decision = only_call(parse(read_sample("react_json/keyword_variants.txt")))
    # Then the call is read and the label is not part of the thought
    assert decision.calls[0].arguments == {"city": "Rome"}
    assert decision.thought == "The user asks for Rome, I will call the weather tool."


def test_hallucinated_observation_and_what_follows_are_ignored(read_sample: Callable[[str], str]) -> None:
    # Given an action, then an observation and a final answer the model invented / When parsed
    decision = only_call(parse(read_sample("react_json/hallucinated_observation.txt")))
    # Then the action stands, the invented final answer does not, and the note says so
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "observation" in decision.note


def test_final_answer_containing_code_fences_and_json(read_sample: Callable[[str], str]) -> None:
    # Given a final answer whose text holds a python fence and JSON / When parsed
    decision = parse(read_sample("react_json/final_answer_with_code.txt"))
    # Then the whole answer text is returned intact
    assert isinstance(decision, FinalAnswer)
    assert "```python\nimport json\ndata = json.loads('{\"a\": 1}')" in decision.text
    assert decision.text.endswith("This prints 1.")
    assert decision.thought == "I know how to do this without any tool."


def test_final_answer_given_as_an_object_becomes_json_text(read_sample: Callable[[str], str]) -> None:
    # Given a final answer whose action_input is an object / When parsed
    decision = parse(read_sample("react_json/final_answer_as_object.txt"))
    # Then the answer is that object as JSON text
    assert isinstance(decision, FinalAnswer)
    assert '"temperature": 21' in decision.text and '"sunny": true' in decision.text


def test_chinese_final_answer_action(read_sample: Callable[[str], str]) -> None:
    # Given a Chinese thought label and the action "最终答案" / When parsed
    decision = parse(read_sample("react_json/chinese_final_answer.txt"))
    # Then it is a final answer with its thought
    assert decision == FinalAnswer(text="北京今天晴，气温 3°C。", thought="我已经知道答案了。")  # noqa: RUF001


def test_nested_braces_and_unicode_in_arguments(read_sample: Callable[[str], str]) -> None:
    # Given nested objects, CJK text, an emoji and braces inside a string / When parsed
    decision = only_call(parse(read_sample("react_json/nested_unicode.txt")))
    # Then the arguments are read exactly
    assert decision.calls[0].arguments == {
        "filter": {"city": "北京", "range": {"from": "2024-01-01", "to": "2024-01-31"}},
        "note": "naïve café ☕ {not a brace problem}",
    }


def test_react_text_lines_are_accepted_as_a_fallback() -> None:
    # Given Action/Action Input lines instead of a JSON block / When parsed
    decision = only_call(parse('Thought: search\nAction: search\nAction Input: {"query": "x"}'))
    # Then the call is still read
    assert decision.calls[0].arguments == {"query": "x"}


def test_call_id_uses_the_given_prefix() -> None:
    # Given a call and a prefix naming the run and iteration / When parsed
    decision = only_call(parse('```json\n{"action": "get_time", "action_input": {}}\n```', prefix="run7_3"))
    # Then the id is the prefix and the call's position
    assert decision.calls[0].id == "run7_3_0"


def test_truncated_block_is_a_parse_error_about_the_block(read_sample: Callable[[str], str]) -> None:
    # Given a block cut off before its closing braces / When parsed
    decision = parse(read_sample("react_json/truncated_block.txt"))
    # Then the error says the JSON block could not be read
    assert isinstance(decision, ParseError)
    assert "JSON action block could not be read" in decision.message


def test_text_without_a_block_is_a_parse_error(read_sample: Callable[[str], str]) -> None:
    # Given an answer written outside the format / When parsed / Then the error says the block is missing
    decision = parse(read_sample("react_json/no_block.txt"))
    assert decision == ParseError(message="Your reply has no JSON action block.")


@pytest.mark.parametrize("text", ["", "   \n\t  "])
def test_empty_or_whitespace_output_is_a_parse_error(text: str) -> None:
    # Given an empty reply / When parsed / Then it is a parse error saying so
    assert parse(text) == ParseError(message="Your reply was empty.")


def test_action_that_is_not_a_name_is_a_parse_error() -> None:
    # Given an action value that is an object / When parsed / Then the error says it must be a tool name
    decision = parse('```json\n{"action": {"tool": "search"}, "action_input": {}}\n```')
    assert isinstance(decision, ParseError)
    assert "name of a tool" in decision.message


def test_tool_name_case_is_fixed_from_the_tool_list(tools: list[ToolSpec]) -> None:
    # Given an action naming a known tool in the wrong case / When parsed with the tools
    decision = only_call(parse('```json\n{"action": "Get_Weather", "action_input": "Oslo"}\n```', tools))
    # Then the call uses the tool's real name and its required parameter
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("get_weather", {"city": "Oslo"})


def test_a_call_object_stands_for_the_action_block(tools: list[ToolSpec]) -> None:
    # Given a reply whose block names the tool with "name" and "arguments", as native-call models write it
    reply = 'Thought: look it up.\n```json\n{"name": "search", "arguments": {"query": "tallest building"}}\n```'
    # When parsed / Then it is the call
    decision = get_protocol("react_json").parse(Completion(content=reply), tools)
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("search", {"query": "tallest building"})]


def test_a_final_answer_given_as_its_answer_argument_is_that_text() -> None:
    # Given the final answer action called with its text under "answer" (smolagents' final_answer tool)
    reply = 'Action:\n{"name": "final_answer", "arguments": {"answer": "It is 42."}}'
    # When parsed / Then the answer is the text, not the object
    decision = get_protocol("react_json").parse(Completion(content=reply), None)
    assert decision == FinalAnswer(text="It is 42.")


AUTOGPT_COMMAND = (
    '{\n    "thoughts": {\n        "text": "I need the winning times.",\n        "criticism": "None"\n    },\n'
    '    "command": {\n        "name": "search",\n        "args": {\n            "query": "Boston Marathon"\n'
    "        }\n    }\n}"
)


@pytest.mark.parametrize(
    "reply",
    [
        AUTOGPT_COMMAND,
        '{"thoughts": {"text": "I need the winning times."}, "use_tool": {"name": "search", "arguments": '
        '{"query": "Boston Marathon"}}}',
    ],
)
def test_a_call_nested_beside_its_thoughts_is_the_call(reply: str) -> None:
    # Given AutoGPT's reply: its thoughts, and the call under "command" (or, later, "use_tool")
    # When parsed
    decision = only_call(parse(reply))
    # Then it is that call, and the thought is the one it wrote
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("search", {"query": "Boston Marathon"})
    assert decision.thought == "I need the winning times."


def test_a_nested_finish_command_is_the_final_answer() -> None:
    # Given AutoGPT's finish command, its text under "response" / When parsed
    decision = parse('{"thoughts": {"text": "Done."}, "command": {"name": "finish", "args": {"response": "42."}}}')
    # Then it is the final answer
    assert decision == FinalAnswer(text="42.", thought="Done.")
