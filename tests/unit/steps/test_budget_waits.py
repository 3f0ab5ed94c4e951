"""Budgets that ask, at the step boundary on a moto table: IterationGuard asks at the budget (a wait cut to
the run's deadline) or, under `end`, starts the final round as before; the wait marks the run; what the wait
ended with (a raise, a timeout, an Express workflow's plain invocation) decides how the run goes on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from stepwise.config.model import StepwiseConfig
from stepwise.models.api_requests import BudgetRequest
from stepwise.models.messages import ChatMessage
from stepwise.models.state import BudgetWaitEvent, RunSpend, StatePayload
from stepwise.steps.budget_waits import await_budget
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from tests.conftest import PROJECT_ROOT

NOW = 1_900_000_000.0


@pytest.fixture(scope="module")
def dynamodb_table() -> Iterator[tuple[Any, str]]:
    """One moto table for the module's runs (each test makes runs of its own): a table per test cost more
    than the tests."""
    import boto3
    from moto import mock_aws

    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), "conversations")
        yield client, "conversations"


def runtime_for(dynamodb_table: tuple[Any, str], tmp_path: Path, on_budget: str) -> StepRuntime:
    """A runtime at NOW with one profile capped at 100 tokens, a 600 s deadline and a 900 s wait."""
    limits = {"max_total_tokens": 100, "on_budget": on_budget, "max_execution_seconds": 600}
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}},
            "profiles": {"default": {"model": "m", "strategy": "react", "limits": limits}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    store = ConversationStore(client, table_name)
    return StepRuntime(config=config, config_dir=tmp_path, store=store, clock=lambda: NOW)


def at_budget(runtime: StepRuntime) -> StatePayload:
    """A run after its first iteration, having spent 150 of its 100 tokens."""
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    first = iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime)
    assert first.run is not None
    spent = RunSpend(input_tokens=100, output_tokens=50)
    return first.model_copy(update={"run": first.run.model_copy(update={"spend": spent}), "next": "tool_calls"})


def test_the_default_end_makes_the_budget_the_final_round_as_before(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run at its budget under on_budget: end
    runtime = runtime_for(dynamodb_table, tmp_path, "end")
    # When the guard runs
    guarded = iteration_guard(at_budget(runtime), runtime)
    # Then the next iteration is the final round, as before
    assert (guarded.iteration, guarded.next, guarded.final_round_reason) == (2, "final_round", "token_budget")


def test_asking_at_the_budget_starts_no_iteration_and_waits_no_longer_than_the_run_has_left(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run at its budget under on_budget: ask, its wait configured at 900 s and 600 s left
    runtime = runtime_for(dynamodb_table, tmp_path, "ask")
    # When the guard runs, and the wait task it leads to runs
    guarded = iteration_guard(at_budget(runtime), runtime)
    assert guarded.run is not None
    await_budget(
        BudgetWaitEvent(run_id=guarded.run_id, iteration=guarded.iteration, run=guarded.run, task_token="t-1"),
        runtime,
    )
    # Then the run waits for at most 600 s, at iteration 1, and META says why and what was spent
    assert (guarded.iteration, guarded.next, guarded.run.budget_wait_seconds) == (1, "await_budget", 600)
    meta = runtime.store.require_run(guarded.run_id)
    assert meta.budget_wait is not None
    assert (meta.status, meta.budget_wait.reason, meta.budget_wait.spent_tokens) == (
        "WAITING_BUDGET",
        "token_budget",
        150,
    )
    assert (meta.budget_wait.timeout_at, meta.budget_wait.token) == (NOW + 600, "t-1")


@pytest.mark.parametrize(
    ("outcome", "iteration", "next_step"),
    [
        ({"Error": "States.Timeout", "Cause": ""}, 1, "limit_hit"),
        ({"end": True}, 1, "limit_hit"),
        ({"Payload": {"waiting": True}, "StatusCode": 200}, 2, "final_round"),
        ({"max_total_tokens": 1000}, 2, "continue"),
    ],
    ids=["timed-out", "ended", "express", "raised"],
)
def test_what_the_wait_ended_with_decides_how_the_run_goes_on(
    dynamodb_table: tuple[Any, str], tmp_path: Path, outcome: dict[str, Any], iteration: int, next_step: str
) -> None:
    # Given a run waiting at its budget
    runtime = runtime_for(dynamodb_table, tmp_path, "ask")
    waiting = iteration_guard(at_budget(runtime), runtime)
    assert waiting.run is not None
    await_budget(BudgetWaitEvent(run_id=waiting.run_id, iteration=1, run=waiting.run, task_token="t-1"), runtime)
    # When the guard runs with what the wait ended with
    guarded = iteration_guard(waiting, runtime, budget=outcome)
    # Then a timeout or an end stops the run now (Format), an Express workflow gets the final round, and a
    # raise starts the next iteration with the new cap; the run is no longer WAITING_BUDGET once it did not wait
    assert (guarded.iteration, guarded.next) == (iteration, next_step)
    assert guarded.final_round_reason == (None if next_step == "continue" else "token_budget")
    if next_step == "continue":
        assert guarded.run is not None and guarded.run.max_total_tokens == 1000
    if "Error" in outcome or "Payload" in outcome:
        assert runtime.store.require_run(waiting.run_id).status == "RUNNING"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "give add_tokens, add_usd, or end: true"),
        ({"end": False}, "give add_tokens, add_usd, or end: true"),
        ({"end": True, "add_tokens": 5}, "give end: true alone"),
        ({"add_tokens": 0}, "greater than or equal to 1"),
        ({"add_usd": -1.0}, "greater than 0"),
        ({"add_tokens": "5"}, "valid integer"),
    ],
    ids=["empty", "end-false", "end-and-raise", "zero-tokens", "negative-usd", "string"],
)
def test_a_budget_answer_that_says_nothing_or_too_much_is_refused(body: dict[str, Any], problem: str) -> None:
    # Given a body / When it is read / Then it is refused, saying why
    with pytest.raises(ValidationError, match=problem):
        BudgetRequest.model_validate(body)


def test_the_wait_shows_what_the_run_spent_with_its_child_runs_as_the_budget_counts_it(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run under on_budget: ask that spent 30 of its 100 tokens itself and 90 through a child run
    runtime = runtime_for(dynamodb_table, tmp_path, "ask")
    first = at_budget(runtime)
    assert first.run is not None
    spent = RunSpend(input_tokens=20, output_tokens=10, delegated_tokens=90)
    payload = first.model_copy(update={"run": first.run.model_copy(update={"spend": spent})})
    # When the guard finds it at its budget and the wait begins
    guarded = iteration_guard(payload, runtime)
    assert guarded.run is not None and guarded.next == "await_budget"
    await_budget(BudgetWaitEvent(run_id=guarded.run_id, iteration=1, run=guarded.run, task_token="t-1"), runtime)
    # Then the wait shows the 120 tokens the budget counted, not the 30 below the cap
    wait = runtime.store.require_run(guarded.run_id).budget_wait
    assert wait is not None and (wait.reason, wait.spent_tokens) == ("token_budget", 120)
