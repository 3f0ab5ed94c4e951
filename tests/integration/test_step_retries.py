"""Each state handler, invoked twice with the same event (a retried step), stores nothing twice."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.local.environment import LocalEnvironment
from tests.integration.conftest import RUN_ID, start_demo_run, stored_state


def invoke(environment: LocalEnvironment, logical_id: str, event: dict[str, Any]) -> Any:
    return environment.invoke(logical_id, event)


def first_tool_event(payload: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": payload["run_id"], "iteration": payload["iteration"], "index": 0, "call": payload["calls"][0]}


def advance_to(environment: LocalEnvironment, state: str) -> dict[str, Any]:
    """Run the demo loop through the handlers up to (not including) `state` in iteration 1; its input event."""
    payload = start_demo_run(environment)
    order = ["IterationGuardFunction", "LLMCallFunction", "ParseFunction"]
    for logical_id in order[: order.index(state)] if state in order else order:
        payload = invoke(environment, logical_id, payload)
    if state == "ToolInvokeFunction":
        return first_tool_event(payload)
    return payload


@pytest.mark.parametrize("state", ["IterationGuardFunction", "LLMCallFunction", "ParseFunction", "ToolInvokeFunction"])
def test_a_retried_loop_step_returns_the_same_result_and_stores_nothing_more(
    demo_environment: LocalEnvironment, state: str
) -> None:
    # Given a run advanced to the step under test
    event = advance_to(demo_environment, state)
    # When the step's handler is invoked, then invoked again with the same event
    first = invoke(demo_environment, state, event)
    after_first = stored_state(demo_environment)
    second = invoke(demo_environment, state, event)
    # Then the second invocation returns the same payload and the store is unchanged
    assert second["call_id"] == first["call_id"] if state == "ToolInvokeFunction" else second == first
    assert stored_state(demo_environment) == after_first


def run_to_final_answer(environment: LocalEnvironment) -> dict[str, Any]:
    payload = start_demo_run(environment)
    while True:
        for logical_id in ("IterationGuardFunction", "LLMCallFunction", "ParseFunction"):
            payload = invoke(environment, logical_id, payload)
        if payload["next"] != "tool_calls":
            return payload
        for index, call in enumerate(payload["calls"]):
            invoke(environment, "ToolInvokeFunction", first_tool_event(payload) | {"index": index, "call": call})


def test_a_retried_format_keeps_the_first_outcome(demo_environment: LocalEnvironment) -> None:
    # Given a run whose model gave its final answer
    payload = run_to_final_answer(demo_environment)
    # When Format runs twice
    first = invoke(demo_environment, "FormatFunction", payload)
    after_first = stored_state(demo_environment)
    second = invoke(demo_environment, "FormatFunction", payload)
    # Then the run is SUCCEEDED once, with the same answer, and nothing else changed
    assert (
        first
        == second
        == {"run_id": RUN_ID, "status": "SUCCEEDED", "stop_reason": "final_answer", "online_eval": False}
    )
    assert stored_state(demo_environment) == after_first


def test_a_retried_format_failure_records_the_failure_once(demo_environment: LocalEnvironment) -> None:
    # Given a run whose model call failed permanently
    payload = start_demo_run(demo_environment) | {
        "error": {"Error": "LLMPermanentError", "Cause": '{"errorMessage": "HTTP 400: bad model"}'}
    }
    # When FormatFailure runs twice
    invoke(demo_environment, "FormatFunction", payload)
    after_first = stored_state(demo_environment)
    invoke(demo_environment, "FormatFunction", payload)
    # Then the run is FAILED with the error's message, stored once
    assert (after_first["meta"]["status"], after_first["meta"]["outcome"]) == ("FAILED", "none")
    error = after_first["meta"]["error"]
    assert (error["type"], error["message"]) == ("LLMPermanentError", "HTTP 400: bad model")
    assert stored_state(demo_environment) == after_first
