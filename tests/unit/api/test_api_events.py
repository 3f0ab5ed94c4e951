"""The order and completeness of a run's events, whatever order its steps were stored in."""

from __future__ import annotations

from stepwise.models.run import StepRecord
from stepwise.steps.api.events import deliverable_steps


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
