"""The payload a restarted local engine resumes an open run with, rebuilt from the stored items."""

from __future__ import annotations

from typing import Any

from stepwise.local.environment import LocalEnvironment
from stepwise.local.run_recovery import resume_input
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunUsage
from stepwise.models.step_record import StepRecord
from tests.integration.conftest import RUN_ID, start_demo_run


def run_two_iterations(environment: LocalEnvironment) -> dict[str, Any]:
    """The demo run driven through the handlers for two iterations; the payload LLMCall returned last."""
    payload = start_demo_run(environment)
    for _ in range(2):
        called = environment.invoke("LLMCallFunction", environment.invoke("IterationGuardFunction", payload))
        payload = environment.invoke("ParseFunction", called)
        for index, call in enumerate(payload["calls"]):
            event = {"run_id": RUN_ID, "iteration": payload["iteration"], "index": index, "call": call}
            environment.invoke("ToolInvokeFunction", event)
    return called


def test_a_resumed_run_carries_the_spend_of_the_iterations_before_the_one_it_resumes(
    demo_environment: LocalEnvironment,
) -> None:
    # Given a run whose two iterations' model calls are stored, left open at iteration 3
    last_call = run_two_iterations(demo_environment)
    meta = demo_environment.runtime.store.begin_iteration(RUN_ID, 3)
    # When the payload to resume it is rebuilt from the store
    resumed = resume_input(meta, demo_environment.runtime)
    # Then it re-enters iteration 3 with the tokens the loop had carried after iteration 2
    assert resumed["iteration"] == 2
    assert resumed["run"]["spend"] == last_call["run"]["spend"]
    assert resumed["run"]["spend"]["input_tokens"] > 0


def test_a_run_resumes_at_its_latest_stored_iteration_not_the_one_meta_last_recorded(
    demo_environment: LocalEnvironment,
) -> None:
    # Given a run whose two iterations are stored, while META still says iteration 1 (it is written
    # only at the first iteration and at the end)
    run_two_iterations(demo_environment)
    meta = demo_environment.runtime.store.require_run(RUN_ID)
    assert meta.iteration == 1
    # When the payload to resume it is rebuilt from the store
    resumed = resume_input(meta, demo_environment.runtime)
    # Then it re-enters iteration 2, not 1: the first iteration is not replayed
    assert resumed["iteration"] == 1


def test_a_resumed_run_keeps_its_count_of_consecutive_parse_errors(demo_environment: LocalEnvironment) -> None:
    # Given a run whose iteration-1 decision was its second parse error in a row, and whose iteration-2
    # model message is stored
    start_demo_run(demo_environment)
    store = demo_environment.runtime.store
    meta = store.begin_iteration(RUN_ID, 1)
    unreadable = ChatMessage(role="assistant", content="no action")
    store.record_message(meta, 1, 0, unreadable, StepRecord(iteration=1, kind="llm"))
    store.record_decision(meta, StepRecord(iteration=1, kind="parse", decision="parse_error", parse_errors=2), [])
    store.record_message(meta, 2, 0, unreadable, StepRecord(iteration=2, kind="llm"))
    # When the payload to resume it is rebuilt
    resumed = resume_input(store.require_run(RUN_ID), demo_environment.runtime)
    # Then iteration 2 is replayed knowing two parse errors came before it, so max_parse_errors still holds
    assert (resumed["iteration"], resumed["parse_errors"]) == (1, 2)


def test_a_resumed_run_carries_its_children_s_spend_but_that_of_the_iteration_it_replays(
    demo_environment: LocalEnvironment,
) -> None:
    # Given a run whose agent calls of iterations 1 and 2 each stored a child run's usage, left open at iteration 2
    start_demo_run(demo_environment)
    store = demo_environment.runtime.store
    meta = store.begin_iteration(RUN_ID, 1)
    for iteration, tokens in ((1, (100, 50)), (2, (7, 3))):
        usage = RunUsage(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=0.5)
        step = StepRecord(
            iteration=iteration, kind="tool", n=0, action="researcher", call_id=f"c{iteration}", child_usage=usage
        )
        message = ChatMessage(role="tool", content="answer", tool_call_id=f"c{iteration}", name="researcher")
        store.record_message(meta, iteration, 1, message, step)
    # When the payload to resume it is rebuilt from the store
    resumed = resume_input(meta, demo_environment.runtime)
    # Then it carries iteration 1's child (iteration 2's is added again by the guard after its replayed calls)
    assert resumed["iteration"] == 1
    assert (resumed["run"]["spend"]["delegated_tokens"], resumed["run"]["spend"]["delegated_cost_usd"]) == (150, 0.5)
