"""Steering at the step boundary on a moto table: posted messages move into the conversation where the next
model call reads them; IterationGuard waits for a paused run, and after the wait goes on or ends at the
deadline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatMessage
from stepwise.models.state import PauseWaitEvent, StatePayload
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.steering import PauseSettled, await_resume, deliver_posted
from stepwise.store import ConversationStore
from stepwise.store.keys import STEER_FIRST_SLOT
from tests.conftest import PROJECT_ROOT

NOW = 1_900_000_000.0


@pytest.fixture(scope="module")
def dynamodb_table() -> Iterator[tuple[Any, str]]:
    """One moto table for the module's runs (each test makes runs of its own)."""
    import boto3
    from moto import mock_aws

    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), "conversations")
        yield client, "conversations"


@pytest.fixture
def runtime(dynamodb_table: tuple[Any, str], tmp_path: Path) -> StepRuntime:
    """A runtime at NOW with one profile whose runs have a 600 s deadline."""
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}},
            "profiles": {"default": {"model": "m", "limits": {"max_execution_seconds": 600}}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    return StepRuntime(
        config=config, config_dir=tmp_path, store=ConversationStore(client, table_name), clock=lambda: NOW
    )


def first_iteration(runtime: StepRuntime) -> StatePayload:
    """A run past its first IterationGuard."""
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    return iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime)


def test_posted_messages_move_after_the_last_iteration_in_order_with_their_steps(
    runtime: StepRuntime, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run at its first iteration, told two things
    payload = first_iteration(runtime)
    assert payload.run is not None
    store = runtime.store
    meta = store.require_run(payload.run_id)
    for text in ("Use the EU account.", "And be brief."):
        store.steering.post(meta, text[:3], text, by="alice")
    # When the model call of iteration 1 reads its conversation
    conversation = deliver_posted(payload.run_id, 1, payload.run, store.conversation(payload.run_id), runtime)
    # Then both follow the opening message, in the order posted, and nothing waits any more
    told = [(message.content, message.iteration, message.slot) for message in conversation.messages[1:]]
    assert told == [("Use the EU account.", 0, STEER_FIRST_SLOT), ("And be brief.", 0, STEER_FIRST_SLOT + 1)]
    assert store.steering.waiting(payload.run_id) == []
    # and a later read finds them stored where they were put, each with its `message` step
    again = ConversationStore(*dynamodb_table).conversation(payload.run_id)  # a store with nothing cached
    assert [message.content for message in again.messages] == ["Go", "Use the EU account.", "And be brief."]
    assert again.posted == []
    steps = [step for step in store.list_steps(payload.run_id) if step.kind == "message"]
    assert [(step.observation, step.call_id, step.n) for step in steps] == [
        ("Use the EU account.", "Use", 0),
        ("And be brief.", "And", 1),
    ]


def test_a_paused_run_starts_no_iteration_and_waits_until_its_deadline_at_most(runtime: StepRuntime) -> None:
    # Given a run whose Parse found a pause asked
    payload = first_iteration(runtime)
    paused = payload.model_copy(update={"context": payload.context.model_copy(update={"pause": True})})
    # When the guard runs
    guarded = iteration_guard(paused, runtime)
    # Then no iteration starts: the run goes to wait, for what is left before its deadline
    assert (guarded.iteration, guarded.next, guarded.context.pause_seconds) == (1, "await_resume", 600)


def test_the_wait_marks_the_run_paused_with_its_token(runtime: StepRuntime) -> None:
    # Given a run asked to pause
    payload = first_iteration(runtime)
    assert runtime.store.steering.request_pause(payload.run_id, by="alice")
    # When its wait begins
    await_resume(PauseWaitEvent(pause=True, run_id=payload.run_id, iteration=1, seconds=600, task_token="t-1"), runtime)
    # Then the run is PAUSED, its wait's token and end stored
    meta = runtime.store.require_run(payload.run_id)
    assert meta.status == "PAUSED" and meta.pause is not None
    assert (meta.pause.token, meta.pause.iteration, meta.pause.timeout_at) == ("t-1", 1, NOW + 600)


def test_a_wait_whose_pause_was_withdrawn_first_does_not_pause(runtime: StepRuntime) -> None:
    # Given a run whose pause was asked, then withdrawn before it waited
    payload = first_iteration(runtime)
    runtime.store.steering.request_pause(payload.run_id, by="alice")
    assert runtime.store.steering.resume(payload.run_id, None)
    # When its wait begins / Then it raises PauseSettled (caught: the iteration goes on), the run RUNNING
    with pytest.raises(PauseSettled):
        await_resume(PauseWaitEvent(pause=True, run_id=payload.run_id, iteration=1, seconds=9, task_token="t"), runtime)
    assert runtime.store.require_run(payload.run_id).status == "RUNNING"


def test_after_a_resume_the_next_iteration_starts_without_the_pause(runtime: StepRuntime) -> None:
    # Given a paused run's payload
    payload = first_iteration(runtime)
    paused = payload.model_copy(update={"context": payload.context.model_copy(update={"pause": True})})
    # When the guard runs with what the resume sent
    guarded = iteration_guard(paused, runtime, resume={"resumed": True})
    # Then iteration 2 starts, the pause cleared
    assert (guarded.iteration, guarded.next, guarded.context.pause) == (2, "continue", False)


def test_a_pause_that_lasts_until_the_deadline_ends_the_run_with_its_best_answer(runtime: StepRuntime) -> None:
    # Given a run waiting paused
    payload = first_iteration(runtime)
    runtime.store.steering.request_pause(payload.run_id, by="alice")
    await_resume(PauseWaitEvent(pause=True, run_id=payload.run_id, iteration=1, seconds=9, task_token="t"), runtime)
    paused = payload.model_copy(update={"context": payload.context.model_copy(update={"pause": True})})
    # When its wait times out
    guarded = iteration_guard(paused, runtime, resume={"Error": "States.Timeout", "Cause": "deadline"})
    # Then the run goes to Format at once, stopped by its deadline, and is RUNNING again for Format to end it
    assert (guarded.next, guarded.final_round_reason, guarded.iteration) == ("limit_hit", "deadline", 1)
    meta = runtime.store.require_run(payload.run_id)
    assert (meta.status, meta.pause) == ("RUNNING", None)
