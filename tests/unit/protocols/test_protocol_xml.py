"""Parsing the xml protocol: <thought>, <action>tool(...)</action>, <final_answer>."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import get_protocol


def parse(text: str, tools: list[ToolSpec] | None = None) -> Decision:
    return get_protocol("xml").parse(Completion(content=text), tools)


def only_call(decision: Decision) -> ToolCalls:
    assert isinstance(decision, ToolCalls), decision
    assert len(decision.calls) == 1
    return decision


def test_named_arguments_with_escaped_quotes(read_sample: Callable[[str], str]) -> None:
    # Given named arguments, one holding escaped quotes / When parsed
    decision = only_call(parse(read_sample("xml/named_arguments.txt")))
    # Then the quotes are unescaped and the number keeps its type
    assert decision.calls[0].model_dump() == {
        "id": "call_0",
        "name": "search",
        "arguments": {"query": 'the "Dune" novel by Frank Herbert', "limit": 5},
    }
    assert decision.thought == "The user wants to know about the novel, so I will search the catalogue."


def test_positional_arguments_take_parameter_names_in_schema_order(
    read_sample: Callable[[str], str], tools: list[ToolSpec]
) -> None:
    # Given positional arguments and the tool's schema (city, days, unit) / When parsed
    decision = only_call(parse(read_sample("xml/positional_arguments.txt"), tools))
    # Then they are named after the parameters in order
    assert decision.calls[0].arguments == {"city": "Paris", "days": 3}


def test_positional_arguments_without_tools_are_numbered(read_sample: Callable[[str], str]) -> None:
    # Given positional arguments and no tools / When parsed / Then they are arg0, arg1
    decision = only_call(parse(read_sample("xml/positional_arguments.txt")))
    assert decision.calls[0].arguments == {"arg0": "Paris", "arg1": 3}


def test_positional_and_named_arguments_mixed(read_sample: Callable[[str], str], tools: list[ToolSpec]) -> None:
    # Given one positional and two named single-quoted arguments / When parsed with the tools
    decision = only_call(parse(read_sample("xml/mixed_arguments.txt"), tools))
    # Then the positional one takes the first parameter not named
    assert decision.calls[0].arguments == {"amount": 250, "from": "EUR", "to": "JPY"}


def test_python_literals_in_arguments(read_sample: Callable[[str], str]) -> None:
    # Given True, None and a list / When parsed / Then they keep JSON types
    decision = only_call(parse(read_sample("xml/python_literals.txt")))
    assert decision.calls[0].arguments == {
        "title": "Printer on floor 3 is jammed",
        "urgent": True,
        "assignee": None,
        "tags": ["hardware", "printer"],
    }


def test_nested_braces_and_unicode_in_arguments(read_sample: Callable[[str], str]) -> None:
    # Given an object argument and a string with parentheses and unicode / When parsed
    decision = only_call(parse(read_sample("xml/nested_unicode.txt")))
    # Then both are read exactly
    assert decision.calls[0].arguments == {
        "filter": {"city": "北京", "range": {"from": "2024-01-01", "to": "2024-01-31"}},
        "note": "naïve café ☕ (see notes)",
    }


def test_final_answer_containing_code_fences_and_json(read_sample: Callable[[str], str]) -> None:
    # Given a final answer holding a JSON fence / When parsed
    decision = parse(read_sample("xml/final_answer_with_code.txt"))
    # Then the whole content of the tag is the answer
    assert isinstance(decision, FinalAnswer)
    assert '```json\n{"retries": 3, "backoff": {"base": 0.5, "max": 8}}\n```' in decision.text
    assert decision.text.endswith("Load it with `json.load`.")
    assert decision.thought == "I can answer this directly."


def test_hallucinated_observation_and_what_follows_are_ignored(read_sample: Callable[[str], str]) -> None:
    # Given an action, then an invented <observation> and final answer / When parsed
    decision = only_call(parse(read_sample("xml/hallucinated_observation.txt")))
    # Then the action stands and the note says the rest was ignored
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "observation" in decision.note


def test_several_actions_take_the_first_and_say_so(read_sample: Callable[[str], str]) -> None:
    # Given two action tags / When parsed / Then the first is taken, with a note
    decision = only_call(parse(read_sample("xml/several_actions.txt")))
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "2 actions" in decision.note


def test_prose_around_and_tag_case_variants(read_sample: Callable[[str], str]) -> None:
    # Given prose around <Thought>/<Action> tags in title case / When parsed
    decision = only_call(parse(read_sample("xml/prose_and_case.txt")))
    # Then the tags are recognised
    assert decision.calls[0].arguments == {"query": "Louvre opening hours"}
    assert decision.thought == "Searching is the fastest way."


def test_unclosed_final_answer_runs_to_the_end(read_sample: Callable[[str], str]) -> None:
    # Given a final answer whose closing tag was cut off / When parsed / Then the rest of the text is the answer
    decision = parse(read_sample("xml/unclosed_final_answer.txt"))
    assert decision == FinalAnswer(text="The Louvre opens at 9am and closes at 6pm.", thought="All done.")


def test_entity_escaped_quotes_are_read(read_sample: Callable[[str], str]) -> None:
    # Given quotes written as &quot; / When parsed / Then the string argument is read
    decision = only_call(parse(read_sample("xml/entity_escaped.txt")))
    assert decision.calls[0].arguments == {"query": "Louvre opening hours"}


def test_entity_inside_a_quoted_argument_is_kept_as_written() -> None:
    # Given a call with real quotes whose argument text holds an entity (as a stored call renders back)
    # When parsed
    decision = only_call(parse('<action>run_sql(query="it&#X27;s &quot;ok&quot;")</action>'))
    # Then the argument is the text between the quotes, entities untouched
    assert decision.calls[0].arguments == {"query": "it&#X27;s &quot;ok&quot;"}


def test_action_as_json_object() -> None:
    # Given a JSON object instead of a call inside <action> / When parsed / Then it is read
    decision = only_call(parse('<action>{"tool": "search", "parameters": {"query": "x"}}</action>'))
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("search", {"query": "x"})


def test_bare_tool_name_without_arguments() -> None:
    # Given a tool name with no parentheses / When parsed / Then it is a call with no arguments
    decision = only_call(parse("<thought>What time is it?</thought><action>get_time</action>"))
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("get_time", {})


def test_unreadable_call_is_a_parse_error_with_the_format(read_sample: Callable[[str], str]) -> None:
    # Given a call missing its closing parenthesis / When parsed / Then the error shows the call format
    decision = parse(read_sample("xml/unreadable_call.txt"))
    assert isinstance(decision, ParseError)
    assert 'tool_name(parameter="value")' in decision.message


def test_text_without_tags_is_a_parse_error(read_sample: Callable[[str], str]) -> None:
    # Given prose only / When parsed / Then the error names the missing tags
    decision = parse(read_sample("xml/no_tags.txt"))
    assert decision == ParseError(message="Your reply has neither an <action> tag nor a <final_answer> tag.")


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_empty_or_whitespace_output_is_a_parse_error(text: str) -> None:
    # Given an empty reply / When parsed / Then it is a parse error
    assert parse(text) == ParseError(message="Your reply was empty.")
