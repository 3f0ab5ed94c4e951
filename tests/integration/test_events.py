"""Every sample event in events/ fed to its function, as `sam local invoke -e` would (here without Docker).

The state events are the payloads of one run of the demo in order, so each is fed after the ones before
it have built up the run they name.
"""

from __future__ import annotations

import json
from typing import Any

from stepwise.local.environment import LocalEnvironment
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import RUN_ID, start_demo_run

EVENTS = PROJECT_ROOT / "events"
STATE_EVENTS = {
    "iteration_guard.json": "IterationGuardFunction",
    "compact.json": "CompactFunction",
    "llm_call.json": "LLMCallFunction",
    "parse.json": "ParseFunction",
    "tool_invoke.json": "ToolInvokeFunction",
    "tool_invoke_await_approval.json": "ToolInvokeFunction",
    "tool_invoke_denied.json": "ToolInvokeFunction",
    "format.json": "FormatFunction",
    "format_failure.json": "FormatFunction",
    "execution_ended.json": "ExecutionEndedFunction",
}


def event(name: str) -> Any:
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def seed_run(environment: LocalEnvironment) -> None:
    start_demo_run(environment, owner="local")


def without_run_context(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload less its run context, whose deadline and expiry depend on when the run was created."""
    return {key: value for key, value in payload.items() if key != "run"}


def without_key(payload: dict[str, Any], key: str) -> dict[str, Any]:
    """A payload less one of its fields."""
    return {name: value for name, value in payload.items() if name != key}


def without_spend(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload less the spend of its run context, which LLMCall adds its call's usage to."""
    return payload | {"run": {key: value for key, value in payload["run"].items() if key != "spend"}}


def test_every_state_event_file_has_a_function() -> None:
    # Given the files in events/ that are not API Gateway events (state events and the execution-ended one)
    files = {path.name for path in EVENTS.glob("*.json") if not path.name.startswith("api_")}
    # Then each one is fed to a function by the tests below
    assert files == set(STATE_EVENTS)


def test_the_loop_events_are_what_each_state_hands_the_next(demo_environment: LocalEnvironment) -> None:
    # Given the run the events name
    seed_run(demo_environment)
    invoke = demo_environment.invoke
    # When the first iteration's events are fed in order
    guard_out = invoke("IterationGuardFunction", event("iteration_guard.json"))
    llm_out = invoke("LLMCallFunction", event("llm_call.json"))
    parse_out = invoke("ParseFunction", event("parse.json"))
    tool_out = invoke("ToolInvokeFunction", event("tool_invoke.json"))
    # Then each output is the next event (LLMCall's with its call's tokens in the run's spend and its
    # request's size in the context), and the tool call is the one the event names
    assert without_run_context(guard_out) == without_run_context(event("llm_call.json"))
    assert without_key(without_spend(event("llm_call.json")), "context") == without_key(
        without_spend(event("parse.json")), "context"
    )
    assert event("parse.json")["context"]["sent_tokens"] == event("parse.json")["run"]["spend"]["input_tokens"]
    assert event("parse.json")["run"]["spend"]["input_tokens"] > event("llm_call.json")["run"]["spend"]["input_tokens"]
    assert guard_out["run"].keys() == event("llm_call.json")["run"].keys()
    assert llm_out == event("parse.json")
    assert parse_out["next"] == "tool_calls"
    assert parse_out["calls"] == [event("tool_invoke.json")["call"]]
    assert tool_out == {"call_id": "call_1_0", "ok": True, "replayed": False}


def test_the_compact_event_summarizes_the_first_iteration_after_the_model_refused_the_request(
    demo_environment: LocalEnvironment,
) -> None:
    # Given the run the event names, through its first iteration and the guard of its second
    seed_run(demo_environment)
    invoke = demo_environment.invoke
    payload = invoke(
        "ParseFunction", invoke("LLMCallFunction", invoke("IterationGuardFunction", event("iteration_guard.json")))
    )
    for index, call in enumerate(payload["calls"]):
        invoke("ToolInvokeFunction", {"run_id": RUN_ID, "iteration": 1, "index": index, "call": call})
    guard_out = invoke("IterationGuardFunction", payload)
    assert without_run_context(guard_out) == without_run_context(without_key(event("compact.json"), "overflow"))
    # When the Compact event (LLMCall's ContextWindowExceeded, caught) is fed
    compacted = invoke("CompactFunction", event("compact.json"))
    # Then the payload points at the summary of iteration 1, written in iteration 2, with no message deleted
    context = compacted["context"]
    assert (context["summary_iteration"], context["summary_n"], context["summary_through"]) == (2, 0, 1)
    assert (compacted["context"]["compacted_at"], compacted["context"]["overflow_at"]) == (2, 2)
    steps = demo_environment.runtime.store.list_steps(RUN_ID)
    compaction = next(step for step in steps if step.kind == "compaction")
    assert compaction.compaction is not None and compaction.compaction.reason == "overflow"
    assert [m.role for m in demo_environment.runtime.store.list_messages(RUN_ID)] == ["user", "assistant", "tool"]


def test_the_approval_events_pause_the_call_then_deny_it_with_the_reason(demo_environment: LocalEnvironment) -> None:
    # Given the run the events name, through the Parse of its first iteration
    seed_run(demo_environment)
    invoke = demo_environment.invoke
    invoke("ParseFunction", invoke("LLMCallFunction", invoke("IterationGuardFunction", event("iteration_guard.json"))))
    # When the call's wait for approval begins, then its denial reaches ToolInvoke
    waited = invoke("ToolInvokeFunction", event("tool_invoke_await_approval.json"))
    status = demo_environment.runtime.store.require_run(RUN_ID).status
    denied = invoke("ToolInvokeFunction", event("tool_invoke_denied.json"))
    # Then the run waited for approval, and the call was not made: its observation gives the reason
    assert (waited, status) == ({"call_id": "call_1_0", "waiting": True}, "WAITING_APPROVAL")
    assert denied == {"call_id": "call_1_0", "ok": False, "replayed": False}
    observation = demo_environment.runtime.store.list_messages(RUN_ID)[-1].content
    assert "not this city" in observation


def test_the_format_event_ends_the_run_with_its_final_answer(demo_environment: LocalEnvironment) -> None:
    # Given the run driven by its handlers through iteration 3, where the demo model answers
    seed_run(demo_environment)
    invoke = demo_environment.invoke
    payload: dict[str, Any] = event("iteration_guard.json")
    for _ in range(3):
        payload = invoke("ParseFunction", invoke("LLMCallFunction", invoke("IterationGuardFunction", payload)))
        for index, call in enumerate(payload["calls"]):
            invoke(
                "ToolInvokeFunction",
                {"run_id": RUN_ID, "iteration": payload["iteration"], "index": index, "call": call},
            )
    assert without_run_context(payload) == without_run_context(event("format.json"))
    # When the Format event is fed
    result = invoke("FormatFunction", event("format.json"))
    # Then the run succeeded with the model's answer
    meta = demo_environment.runtime.store.require_run(RUN_ID)
    assert result == {"run_id": RUN_ID, "status": "SUCCEEDED", "stop_reason": "final_answer", "online_eval": False}
    assert meta.answer and "Paris" in meta.answer


def test_the_format_failure_event_records_the_failed_run(demo_environment: LocalEnvironment) -> None:
    # Given the run the event names
    seed_run(demo_environment)
    # When the FormatFailure event is fed
    result = demo_environment.invoke("FormatFunction", event("format_failure.json"))
    # Then the run is FAILED with the provider's message
    meta = demo_environment.runtime.store.require_run(RUN_ID)
    assert result["status"] == "FAILED"
    assert meta.error is not None and meta.error.type == "LLMPermanentError"
    assert "HTTP 400" in meta.error.message


def test_the_execution_ended_event_records_a_run_its_execution_left_open(demo_environment: LocalEnvironment) -> None:
    # Given the run the event names, still open
    seed_run(demo_environment)
    # When the execution-ended event (FAILED, as EventBridge delivers it) is fed
    result = demo_environment.invoke("ExecutionEndedFunction", event("execution_ended.json"))
    # Then the run is FAILED with the execution's error and its message
    meta = demo_environment.runtime.store.require_run(RUN_ID)
    assert result == {"run_id": RUN_ID, "status": "FAILED", "recorded": True}
    assert meta.error is not None and meta.error.type == "StoreTransientError"
    assert "ProvisionedThroughputExceededException" in meta.error.message
