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
