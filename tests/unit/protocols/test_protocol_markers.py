"""Parsing the markers protocol: /*PLANNING*/, /*ACTION*/ {...} /*END_ACTION*/, /*FINAL_ANSWER*/."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import get_protocol


def parse(text: str, tools: list[ToolSpec] | None = None) -> Decision:
    return get_protocol("markers").parse(Completion(content=text), tools)


def only_call(decision: Decision) -> ToolCalls:
    assert isinstance(decision, ToolCalls), decision
    assert len(decision.calls) == 1
    return decision


def test_planning_and_action(read_sample: Callable[[str], str]) -> None:
    # Given a planning section and an action section / When parsed
    decision = only_call(parse(read_sample("markers/planning_and_action.txt")))
    # Then the call is read and the planning is the thought
    assert decision.calls[0].model_dump() == {
        "id": "call_0",
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "celsius"},
    }
    assert decision.thought == "The user wants the weather in Paris. I will call the weather tool with the city."


def test_final_answer_containing_code_fences_and_json(read_sample: Callable[[str], str]) -> None:
    # Given a final answer holding a JSON fence / When parsed / Then the whole section is the answer
    decision = parse(read_sample("markers/final_answer_with_code.txt"))
    assert isinstance(decision, FinalAnswer)
    assert decision.text.startswith("Use this configuration:")
    assert decision.text.endswith('{"retries": 3, "backoff": {"base": 0.5, "max": 8}}\n```')
    assert decision.thought == "I can answer without tools."


def test_hallucinated_observation_and_what_follows_are_ignored(read_sample: Callable[[str], str]) -> None:
    # Given an action, an invented Observation line and a final answer / When parsed
    decision = only_call(parse(read_sample("markers/hallucinated_observation.txt")))
    # Then the action stands, with a note
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "observation" in decision.note


def test_several_actions_take_the_first_and_say_so(read_sample: Callable[[str], str]) -> None:
    # Given two action sections / When parsed / Then the first is taken, with a note
    decision = only_call(parse(read_sample("markers/several_actions.txt")))
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "2 actions" in decision.note


def test_python_style_json_in_a_fence(read_sample: Callable[[str], str]) -> None:
    # Given a fenced action object with single quotes, True/None and trailing commas / When parsed
    decision = only_call(parse(read_sample("markers/python_style.txt")))
    # Then the arguments keep JSON types
    assert decision.calls[0].arguments == {"title": "Printer jammed", "urgent": True, "assignee": None}


def test_string_parameters_go_to_the_only_required_parameter(
    read_sample: Callable[[str], str], tools: list[ToolSpec]
) -> None:
    # Given parameters written as plain text and the search tool / When parsed
    decision = only_call(parse(read_sample("markers/string_parameters.txt"), tools))
    # Then the text is the tool's required parameter
    assert decision.calls[0].arguments == {"query": "population of Lyon 2023"}


def test_string_parameters_without_tools_go_to_input(read_sample: Callable[[str], str]) -> None:
    # Given parameters as plain text and no tools / When parsed / Then they are under "input"
    decision = only_call(parse(read_sample("markers/string_parameters.txt")))
    assert decision.calls[0].arguments == {"input": "population of Lyon 2023"}


def test_missing_end_marker(read_sample: Callable[[str], str]) -> None:
    # Given an action section whose end marker was cut off / When parsed / Then it is still read
    decision = only_call(parse(read_sample("markers/missing_end_marker.txt")))
    assert decision.calls[0].arguments == {"query": "Louvre opening hours"}


def test_nested_braces_and_unicode_in_parameters(read_sample: Callable[[str], str]) -> None:
    # Given nested objects and unicode / When parsed / Then read exactly
    decision = only_call(parse(read_sample("markers/nested_unicode.txt")))
    assert decision.calls[0].arguments == {
        "filter": {"city": "北京", "range": {"from": "2024-01-01", "to": "2024-01-31"}},
        "note": "naïve café ☕ {braces}",
    }


def test_marker_spelling_variants() -> None:
    # Given lower-case markers with spaces and "END ACTION" / When parsed / Then they are recognised
    decision = only_call(parse('/* action */ {"tool": "get_time"} /* end action */'))
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("get_time", {})


def test_action_without_a_tool_key_is_a_parse_error() -> None:
    # Given an action object that names no tool / When parsed / Then the error says the key is missing
    decision = parse('/*ACTION*/ {"parameters": {"q": 1}} /*END_ACTION*/')
    assert isinstance(decision, ParseError)
    assert '"tool" key' in decision.message


def test_unreadable_action_is_a_parse_error() -> None:
    # Given an action section that is neither JSON nor a call / When parsed / Then a parse error
    decision = parse("/*ACTION*/ please search the web /*END_ACTION*/")
    assert isinstance(decision, ParseError)
    assert "could not be read" in decision.message


def test_text_without_markers_is_the_final_answer_as_trpc_agent_reads_it(read_sample: Callable[[str], str]) -> None:
    # Given prose only / When parsed / Then it is the answer (trpc-agent's planner ends the turn on it)
    decision = parse(read_sample("markers/no_markers.txt"))
    assert decision == FinalAnswer(text="It is sunny in Paris.", thought="")


def test_a_reply_that_only_says_what_it_will_do_is_a_parse_error() -> None:
    # Given a reply announcing a tool call without making it / When parsed / Then the model is asked to act
    decision = parse("I will search for the author first.")
    assert isinstance(decision, ParseError)
    assert "/*ACTION*/" in decision.message


@pytest.mark.parametrize("text", ["", "\t "])
def test_empty_or_whitespace_output_is_a_parse_error(text: str) -> None:
    # Given an empty reply / When parsed / Then it is a parse error
    assert parse(text) == ParseError(message="Your reply was empty.")


def test_an_action_section_of_prose_before_a_final_answer_is_a_thought() -> None:
    # Given Google ADK's planner tags: an ACTION section that only says what the model does, then the answer
    decision = parse("/*REASONING*/Checked the results./*ACTION*/Answering now./*FINAL_ANSWER*/It is 42.")
    # When parsed / Then the final answer is the decision
    assert isinstance(decision, FinalAnswer) and decision.text == "It is 42."


def test_an_action_holding_a_call_beside_a_final_answer_is_still_both_decisions() -> None:
    # Given an ACTION section with a call, then a final answer / When parsed
    decision = parse('/*ACTION*/ {"tool": "search", "parameters": {"query": "x"}} /*FINAL_ANSWER*/ 42')
    # Then the model is told to choose one
    assert isinstance(decision, ParseError) and "both" in decision.message
