"""The steps of a call that needs approval, on a moto table: Parse gives it its wait (cut to the run's
deadline), the wait stores it, and ToolInvoke runs it only once approved."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatMessage
from stepwise.models.state import ApprovalWaitEvent, StatePayload, ToolInvokeEvent
from stepwise.steps.approvals import await_approval
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_invoke import tool_invoke
from stepwise.store import ConversationStore
from tests.support.launch_tool import LAUNCH, MODULE

NOW = 1_900_000_000.0


@pytest.fixture
def config_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "launch_tools.py").write_text(MODULE, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("launch_tools", None)
    if str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


class Clock:
    """Starts at NOW; `skip_to_left` moves it to `seconds_left` before a run's deadline (runs last 600 s)."""

    def __init__(self, seconds_left: float) -> None:
        self.now = NOW
        self.seconds_left = seconds_left

    def __call__(self) -> float:
        return self.now

    def skip_to_left(self) -> None:
        self.now = NOW + 600 - self.seconds_left


def runtime_for(dynamodb_table: tuple[Any, str], config_dir: Path, clock: Clock) -> StepRuntime:
    """A runtime on `clock`, with one profile whose `launch` tool needs approval."""
    config = StepwiseConfig.from_mapping(
        {
            "models": {
                "m": {"provider": "scripted", "scenarios": [{"turns": [{"content": f"```json\n{LAUNCH}\n```"}]}]}
            },
            "tools": {"python": [{"module": "launch_tools", "requires_approval": True}], "builtin": ["calculator"]},
            "profiles": {"default": {"model": "m", "strategy": "react", "limits": {"max_execution_seconds": 600}}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    return StepRuntime(config=config, config_dir=config_dir, store=ConversationStore(client, table_name), clock=clock)


def parsed(runtime: StepRuntime, clock: Clock) -> StatePayload:
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    payload = llm_call(iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime), runtime)
    clock.skip_to_left()
    return parse(payload, runtime)


def waiting_call(dynamodb_table: tuple[Any, str], config_dir: Path) -> tuple[StepRuntime, StatePayload, dict[str, Any]]:
    """A run whose `launch` call its wait-for-approval task stored as waiting; the call's Map item."""
    clock = Clock(seconds_left=300)
    runtime = runtime_for(dynamodb_table, config_dir, clock)
    payload = parsed(runtime, clock)
    item = {"run_id": payload.run_id, "iteration": payload.iteration, "index": 0, "call": payload.calls[0]}
    await_approval(ApprovalWaitEvent.model_validate(item | {"task_token": "token-1"}), runtime)
    return runtime, payload, item


def test_a_call_that_needs_approval_waits_no_longer_than_the_run_has_left(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a tool whose approval waits 900 s by default, in a run with 30 s left when Parse runs
    clock = Clock(seconds_left=30)
    runtime = runtime_for(dynamodb_table, config_dir, clock)
    # When the model's call of it is parsed
    payload = parsed(runtime, clock)
    # Then the call carries a wait of 30 s
    assert [(call.name, call.approval_timeout_seconds) for call in payload.calls] == [("launch", 30)]


def test_the_wait_stores_the_call_and_a_denial_keeps_the_tool_from_running(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given the call, stored as waiting by its wait-for-approval task
    runtime, payload, item = waiting_call(dynamodb_table, config_dir)
    waiting = runtime.store.require_run(payload.run_id).status
    # When ToolInvoke receives the denial the state machine caught
    denial = {"Error": "ApprovalDenied", "Cause": "not today"}
    result = tool_invoke(ToolInvokeEvent.model_validate(item | {"approval": denial}), runtime)
    # Then the run had been WAITING_APPROVAL, the tool never ran, and the observation gives the reason
    assert waiting == "WAITING_APPROVAL"
    assert result.ok is False
    assert not (config_dir / "launched.txt").exists()
    observation = runtime.store.list_messages(payload.run_id)[-1].content
    assert "denied" in observation and "not today" in observation
    assert runtime.store.require_run(payload.run_id).status == "RUNNING"


def test_a_call_that_needs_approval_never_runs_without_a_stored_one(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a call that needs approval whose wait stored nothing (an answer sent around the state machine)
    clock = Clock(seconds_left=300)
    runtime = runtime_for(dynamodb_table, config_dir, clock)
    payload = parsed(runtime, clock)
    item = {"run_id": payload.run_id, "iteration": payload.iteration, "index": 0, "call": payload.calls[0]}
    # When ToolInvoke receives an output claiming approval
    result = tool_invoke(ToolInvokeEvent.model_validate(item | {"approval": {"approved": True}}), runtime)
    # Then the tool is not run
    assert result.ok is False
    assert not (config_dir / "launched.txt").exists()


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        ({"Error": "States.TaskFailed", "Cause": "the wait task failed"}, "the wait for approval failed"),
        ({"Payload": {"call_id": "x", "waiting": True}}, "approval needs a Standard workflow"),
    ],
    ids=["the wait failed", "an Express workflow"],
)
def test_a_call_refused_without_a_person_answering_does_not_tell_the_model_an_approver_denied_it(
    dynamodb_table: tuple[Any, str], config_dir: Path, outcome: dict[str, Any], reason: str
) -> None:
    # Given the call, stored as waiting by its wait-for-approval task
    runtime, payload, item = waiting_call(dynamodb_table, config_dir)
    # When ToolInvoke receives a wait that ended with no person's answer
    tool_invoke(ToolInvokeEvent.model_validate(item | {"approval": outcome}), runtime)
    # Then the tool never ran, and the model reads that no approval could be obtained, and why
    observation = runtime.store.list_messages(payload.run_id)[-1].content
    assert not (config_dir / "launched.txt").exists()
    assert "approver" not in observation
    assert "needs approval, and none could be obtained" in observation and reason in observation


def test_a_call_answered_before_its_wait_marks_the_run_leaves_the_run_running(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a parsed call that needs approval, and an answer that lands after its wait stored it and before the
    # wait marks the run WAITING_APPROVAL: the API records it (and marks the run running unless a call waits),
    # and Step Functions, told, runs ToolInvoke, which settles the call
    clock = Clock(seconds_left=300)
    runtime = runtime_for(dynamodb_table, config_dir, clock)
    payload = parsed(runtime, clock)
    item = {"run_id": payload.run_id, "iteration": payload.iteration, "index": 0, "call": payload.calls[0]}
    client, _ = dynamodb_table
    event_name = "before-parameter-build.dynamodb"

    def answered_first(params: dict[str, Any], **_: Any) -> None:
        if '":status": {"S": "WAITING_APPROVAL"}' not in json.dumps(params):
            return
        client.meta.events.unregister(event_name, answered_first)
        approvals = runtime.store.approvals
        [waiting] = approvals.list(payload.run_id)
        approvals.answer(waiting, "approved", reason=None, by="alice")
        approvals.mark_running_unless_waiting(payload.run_id)
        tool_invoke(ToolInvokeEvent.model_validate(item | {"approval": {"approved": True}}), runtime)

    client.meta.events.register(event_name, answered_first)
    # When the wait-for-approval task runs
    await_approval(ApprovalWaitEvent.model_validate(item | {"task_token": "token-1"}), runtime)
    # Then the call ran once approved, and the run is RUNNING: not WAITING_APPROVAL with nothing to approve
    assert [approval.status for approval in runtime.store.approvals.list(payload.run_id)] == ["approved"]
    assert (config_dir / "launched.txt").exists()
    assert runtime.store.require_run(payload.run_id).status == "RUNNING"
