"""The order and completeness of a run's events, whatever order its steps were stored in; and their cursors."""

from __future__ import annotations

import base64
import json

import pytest

from stepwise.models.step_record import StepRecord
from stepwise.steps.api.events import decode_events_cursor, deliverable_steps, encode_events_cursor
from stepwise.steps.api.problems import InvalidRequest


def steps_of_an_iteration_with_two_parallel_calls(*, tools_stored: tuple[int, ...]) -> list[StepRecord]:
    stored = [StepRecord(iteration=1, kind="tool", n=n) for n in tools_stored]
    return [
        *stored,
        StepRecord(iteration=1, kind="parse", calls=[{"id": "a"}, {"id": "b"}]),
        StepRecord(iteration=1, kind="llm"),
    ]


def test_steps_come_in_the_order_they_happen() -> None:
    # Given an iteration's steps read back in key order (tools stored in reverse)
    steps = steps_of_an_iteration_with_two_parallel_calls(tools_stored=(1, 0))
    # When the deliverable steps are taken
    delivered = deliverable_steps(steps, ended=False)
    # Then they are model call, decision, then the calls by index
    assert [(step.kind, step.n) for step in delivered] == [("llm", None), ("parse", None), ("tool", 0), ("tool", 1)]


def test_tool_calls_wait_until_every_call_of_their_iteration_is_stored() -> None:
    # Given the second call of two stored before the first
    steps = steps_of_an_iteration_with_two_parallel_calls(tools_stored=(1,))
    # When the deliverable steps are taken while the run goes on
    delivered = deliverable_steps(steps, ended=False)
    # Then the calls are held back, so a cursor past call 1 cannot skip call 0
    assert [step.kind for step in delivered] == ["llm", "parse"]


def test_an_ended_run_delivers_every_step() -> None:
    # Given the same incomplete iteration of a run that ended
    steps = steps_of_an_iteration_with_two_parallel_calls(tools_stored=(1,))
    # When the deliverable steps are taken / Then nothing is held back
    assert [step.kind for step in deliverable_steps(steps, ended=True)] == ["llm", "parse", "tool"]


def test_steps_after_a_model_call_whose_decision_was_not_read_wait() -> None:
    # Given a read that found an iteration's model call, its tool call and the next model call, but not
    # the decision between them (stored after the read's Query of decisions)
    steps = [
        StepRecord(iteration=1, kind="llm"),
        StepRecord(iteration=1, kind="tool", n=0),
        StepRecord(iteration=2, kind="llm"),
    ]
    # When the deliverable steps are taken while the run goes on
    delivered = deliverable_steps(steps, ended=False)
    # Then only the model call goes out, so a cursor past the later steps cannot skip the decision
    assert [(step.kind, step.iteration) for step in delivered] == [("llm", 1)]


def test_a_model_calls_reasoning_goes_out_with_it_before_its_decision_is_read() -> None:
    # Given a model call and the reasoning its message carries, whose decision is not stored yet
    steps = [StepRecord(iteration=1, kind="reasoning", thought="weighing"), StepRecord(iteration=1, kind="llm")]
    # When the deliverable steps are taken while the run goes on
    delivered = deliverable_steps(steps, ended=False)
    # Then the call and what the model thought go out, in that order
    assert [step.kind for step in delivered] == ["llm", "reasoning"]


def test_a_cursor_continues_the_run_it_was_returned_for() -> None:
    # Given a cursor returned for run A after the decision of its iteration 2
    cursor = encode_events_cursor("run-a", (2, 2, -1))
    # When run A's events are asked after it / Then it names that place
    assert decode_events_cursor(cursor, "run-a") == (2, 2, -1)


def test_a_cursor_of_another_run_is_refused_naming_the_field_and_why() -> None:
    # Given a cursor returned for run A
    cursor = encode_events_cursor("run-a", (2, 2, -1))
    # When run B's events are asked after it
    with pytest.raises(InvalidRequest) as refused:
        decode_events_cursor(cursor, "run-b", field="Last-Event-ID (header)")
    # Then it is refused, naming the field it came in and that it is another run's
    [error] = refused.value.details["errors"]
    assert error["field"] == "Last-Event-ID (header)" and "another run" in error["reason"]


def test_a_cursor_that_names_no_run_is_refused() -> None:
    # Given a cursor of the format that named no run (version 2)
    unbound = base64.urlsafe_b64encode(json.dumps({"v": 2, "p": [2, 2, -1]}).encode()).decode().rstrip("=")
    # When a run's events are asked after it / Then it is not a cursor this API returns
    with pytest.raises(InvalidRequest, match="not a cursor this API returned"):
        decode_events_cursor(unbound, "run-a")
