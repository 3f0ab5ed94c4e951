"""What LLMCall sends besides the protocol's rendering: a result for every call, and the effective tool_choice."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.models.messages import ToolCall
from stepwise.models.run import StoredMessage
from stepwise.steps.model_request import effective_tool_choice, request_history


def stored(role: str, content: str, iteration: int, slot: int, **fields: Any) -> StoredMessage:
    fields |= {"role": role, "content": content, "iteration": iteration, "slot": slot}
    return StoredMessage.model_validate(fields)


def calls(*ids: str) -> list[ToolCall]:
    return [ToolCall(id=call_id, name="get_weather", arguments={"city": call_id}) for call_id in ids]


def test_a_call_dropped_by_the_parallel_limit_gets_a_not_run_result_after_the_real_ones() -> None:
    # Given an iteration with three calls of which two ran, then the next question
    history = [
        stored("user", "Weather?", 0, 0),
        stored("assistant", "", 1, 0, tool_calls=calls("a", "b", "c")),
        stored("tool", "sunny", 1, 1, tool_call_id="a", name="get_weather"),
        stored("tool", "rainy", 1, 2, tool_call_id="b", name="get_weather"),
        stored("assistant", "Done.", 2, 0),
    ]
    # When the request history is built with a limit of two calls
    rendered = request_history(history, max_parallel_calls=2)
    # Then the dropped call is answered right after the real results, saying it was not run
    assert [(m.role, m.tool_call_id) for m in rendered] == [
        ("user", None),
        ("assistant", None),
        ("tool", "a"),
        ("tool", "b"),
        ("tool", "c"),
        ("assistant", None),
    ]
    assert rendered[4].content.startswith("Not run: at most 2 tool calls are run per reply.")


def test_a_history_where_every_call_has_its_result_is_sent_unchanged() -> None:
    # Given one call and its result
    history = [
        stored("user", "Weather?", 0, 0),
        stored("assistant", "", 1, 0, tool_calls=calls("a")),
        stored("tool", "sunny", 1, 1, tool_call_id="a", name="get_weather"),
    ]
    # When the request history is built; Then it holds the same messages
    assert [m.model_dump() for m in request_history(history, 4)] == [
        m.model_dump(exclude={"iteration", "slot"}) for m in history
    ]


@pytest.mark.parametrize("choice", [None, "auto", "none", "required", "get_weather"])
def test_every_tool_choice_is_sent_as_configured_before_any_tool_call(choice: str | None) -> None:
    # Given a run that has only its question; When the choice is taken; Then it is the configured one
    assert effective_tool_choice(choice, [stored("user", "Weather?", 0, 0)]) == choice


@pytest.mark.parametrize(("choice", "expected"), [("required", "auto"), ("get_weather", "auto"), ("none", "none")])
def test_a_forcing_tool_choice_becomes_auto_once_the_run_called_a_tool(choice: str, expected: str) -> None:
    # Given a run whose first iteration called a tool
    history = [stored("user", "Weather?", 0, 0), stored("assistant", "", 1, 0, tool_calls=calls("a"))]
    # When the choice is taken; Then forcing ones let the model answer, others stay
    assert effective_tool_choice(choice, history) == expected


def test_a_call_id_reused_by_a_later_reply_is_answered_within_its_own_iteration() -> None:
    # Given a server that numbers calls by position: call_0 ran in iteration 1, and is dropped in iteration 2
    history = [
        stored("user", "Weather?", 0, 0),
        stored("assistant", "", 1, 0, tool_calls=calls("call_0")),
        stored("tool", "sunny", 1, 1, tool_call_id="call_0", name="get_weather"),
        stored("assistant", "", 2, 0, tool_calls=calls("call_1", "call_0")),
        stored("tool", "rainy", 2, 1, tool_call_id="call_1", name="get_weather"),
    ]
    # When the request history is built with a limit of one call
    rendered = request_history(history, max_parallel_calls=1)
    # Then iteration 2's call_0 gets its own not-run result
    assert [(m.role, m.tool_call_id) for m in rendered[-3:]] == [
        ("assistant", None),
        ("tool", "call_1"),
        ("tool", "call_0"),
    ]
    assert rendered[-1].content.startswith("Not run")
