"""The limits of a model reply: tool-call arguments past the reply's cap are refused, never stored, and the
refusal is a parse error naming the limit."""

from __future__ import annotations

from stepwise.llm.reply_repair import RawToolCall, repaired_calls
from stepwise.models.decision import FinalAnswer
from stepwise.models.reply_limits import MAX_ARGUMENTS_CHARS, refused_arguments
from stepwise.steps.reply_problems import reply_problem


def test_calls_whose_arguments_take_the_reply_past_the_cap_are_refused_and_the_others_kept() -> None:
    # Given three calls of 40,000, 30,000 and 10,000 characters of arguments (as compact JSON)
    calls = [
        RawToolCall(id="a", name="write", arguments={"text": "a" * (40_000 - 11)}),
        RawToolCall(id="b", name="write", arguments={"text": "b" * (30_000 - 11)}),
        RawToolCall(id="c", name="write", arguments={"text": "c" * (10_000 - 11)}),
    ]
    # When the reply is repaired
    repaired = repaired_calls(calls)
    # Then the second, which takes the total past 60,000, holds only its size; the first and third are kept
    assert [refused_arguments(call) for call in repaired] == [None, 30_000, None]
    assert repaired[0].arguments == calls[0].arguments and repaired[2].arguments == calls[2].arguments


def test_arguments_the_provider_kept_undecoded_are_measured_as_sent() -> None:
    # Given a call whose arguments string was too long to decode, kept as the provider's raw text
    raw = '{"text": "' + "x" * MAX_ARGUMENTS_CHARS + '"}'
    # When the reply is repaired / Then its size is that of the text the model sent
    (call,) = repaired_calls([RawToolCall(id="a", name="write", arguments={"_raw": raw})])
    assert refused_arguments(call) == len(raw)


def test_a_refused_call_is_a_parse_error_naming_the_tool_its_size_and_the_limit() -> None:
    # Given a repaired reply with one refused call and one refused beside it
    calls = repaired_calls([RawToolCall(id=f"c{n}", name="write", arguments={"t": "x" * 70_000}) for n in range(2)])
    # When Parse asks what is wrong with it
    problem = reply_problem(None, FinalAnswer(text=""), calls)
    # Then the model is told which tool, how long its arguments were, the limit, and that nothing ran
    assert problem is not None
    assert problem.message.startswith('The arguments of your call to tool "write" (and 1 more calls) were 70,008 ')
    assert "at most 60,000 characters of arguments in all, so nothing was called" in problem.message
