"""Answering a call that waits for approval through the API function of template.yaml, with Step
Functions a loopback fake at the wire (moto holds the table): what the approver is told, and what the
approval becomes, when SendTaskSuccess's reply is slow, lost, or says the wait is over."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ApprovalSettled
from stepwise.local.template import SamTemplate
from stepwise.models.approval import Approval
from stepwise.models.messages import ChatMessage
from stepwise.models.state import ApprovalWaitEvent, StatePayload, ToolInvokeEvent
from stepwise.steps.approvals import await_approval
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.run_outcomes import record_cancellation
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_invoke import tool_invoke
from stepwise.store import ConversationStore
from tests.conftest import PROJECT_ROOT
from tests.integration.test_api_handler import TABLE, ApiHandler, start_handler
from tests.support.launch_tool import LAUNCH, MODULE
from tests.support.stepfunctions_fake import FakeStepFunctions, Reply, refusal
from tests.support.store_hooks import before_store_call

CONFIG: dict[str, Any] = {
    "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": f"```json\n{LAUNCH}\n```"}]}]}},
    "tools": {"python": [{"module": "launch_tools", "requires_approval": True}]},
    "profiles": {"default": {"model": "m", "strategy": "react", "limits": {"max_execution_seconds": 600}}},
}
# Longer than the API function may run: a reply this late is one the approver never gets.
PAST_THE_API_TIMEOUT = (SamTemplate.load(PROJECT_ROOT / "template.yaml").functions["ApiFunction"].timeout or 3) + 1


@dataclass
class WaitingCall:
    """A run of `key-a` whose call of `launch` waits for approval, and the API function to answer it."""

    api: ApiHandler
    runtime: StepRuntime
    item: dict[str, Any]

    @property
    def path(self) -> str:
        return f"/v1/runs/{self.item['run_id']}/approvals/{self.item['call']['call_id']}"

    def approval(self) -> Approval:
        stored = self.runtime.store.approvals.get(self.item["run_id"], self.item["iteration"], 0)
        assert stored is not None
        return stored

    def tool_invoke(self, request: dict[str, Any]) -> None:
        """ToolInvoke, as the execution runs it once Step Functions takes the answer in `request`."""
        event = ToolInvokeEvent.model_validate(self.item | {"approval": json.loads(request["output"])})
        tool_invoke(event, self.runtime)

    def cancel(self, request: dict[str, Any]) -> None:
        """The owner cancels the run (META CANCELLED, then StopExecution ends the wait)."""
        record_cancellation(self.runtime.store.require_run(self.item["run_id"]), self.runtime, by="key-a")


def waiting_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sfn: FakeStepFunctions, settings: dict[str, Any] = CONFIG
) -> WaitingCall:
    """A run of `key-a` under `settings` (by default its model calls `launch` with target `moon`), waiting."""
    (tmp_path / "launch_tools.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.setenv("STEPFUNCTIONS_ENDPOINT_URL", sfn.url)
    api = start_handler(tmp_path, monkeypatch, settings)
    config = StepwiseConfig.from_mapping(settings, environ={})
    store = ConversationStore(api.dynamodb, TABLE)
    runtime = StepRuntime(config=config, config_dir=tmp_path, store=store, clock=time.time)
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="key-a", profile="default")
    payload = StatePayload.model_validate(execution_input(meta.run_id))
    payload = parse(llm_call(iteration_guard(payload, runtime), runtime), runtime)
    call = payload.calls[0].model_dump()
    item = {"run_id": meta.run_id, "iteration": payload.iteration, "index": 0, "call": call}
    await_approval(ApprovalWaitEvent.model_validate(item | {"task_token": "token-1"}), runtime)
    return WaitingCall(api, runtime, item)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    with mock_aws():
        yield tmp_path
    sys.modules.pop("launch_tools", None)
    while str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def test_an_answer_step_functions_does_not_reply_to_in_time_is_unavailable_and_waits_again(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a waiting call, and Step Functions replying to SendTaskSuccess only after the API function's timeout
    with FakeStepFunctions() as sfn:
        waiting = waiting_call(sandbox, monkeypatch, sfn)
        sfn.script(Reply(delay=PAST_THE_API_TIMEOUT))
        # When the owner approves it
        status, body = waiting.api.call("POST", waiting.path, {"approved": True})
        attempts = [request["operation"] for request in sfn.requests]
    # Then the API gave up (after one retry) with a retryable 503, and the call waits for approval again
    assert (status, body["error"]["type"]) == (503, "unavailable")
    assert attempts == ["SendTaskSuccess", "SendTaskSuccess"]
    assert waiting.approval().status == "pending"


@pytest.mark.parametrize(
    "retry_reply",
    [
        pytest.param(Reply(400, refusal("TaskTimedOut")), id="retry-told-the-token-is-gone"),
        pytest.param(Reply(body=None), id="retry-reply-lost-too"),
    ],
)
def test_an_approval_that_reached_step_functions_succeeds_though_its_reply_was_lost(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, retry_reply: Reply
) -> None:
    # Given a waiting call, and Step Functions that takes the approval (ToolInvoke runs the tool) but
    # whose reply is lost, so that the client's retry fails
    with FakeStepFunctions() as sfn:
        waiting = waiting_call(sandbox, monkeypatch, sfn)
        sfn.script(Reply(body=None, meanwhile=waiting.tool_invoke), retry_reply)
        # When the owner approves it
        status, _ = waiting.api.call("POST", waiting.path, {"approved": True})
    # Then the approver is told it succeeded, and the call stands approved (the run no longer waits)
    assert status == 200
    assert waiting.approval().status == "approved"
    assert waiting.runtime.store.require_run(waiting.item["run_id"]).status == "RUNNING"


def test_an_answer_the_runs_cancellation_came_before_at_the_store_is_run_ended_and_not_stored(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a waiting call, whose run the owner cancels just before the answer is written (ordered at the
    # wire: the cancellation is recorded as the answer's transaction is about to leave)
    with FakeStepFunctions() as sfn:
        waiting = waiting_call(sandbox, monkeypatch, sfn)
        with before_store_call("TransactWriteItems", lambda: waiting.cancel({})) as ordered:
            # When the owner approves it
            status, body = waiting.api.call("POST", waiting.path, {"approved": True})
        told = [request["operation"] for request in sfn.requests]
    # Then the approval lost: 409 run_ended saying how the run ended, nothing stored, Step Functions not told
    assert ordered == ["TransactWriteItems"]
    assert (status, body["error"]["type"], body["error"]["details"]["status"]) == (409, "run_ended", "CANCELLED")
    assert waiting.approval().status == "pending"
    assert told == []


def test_an_answer_stored_before_the_runs_cancellation_stands(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a waiting call whose run is cancelled after the answer was stored, while it is on its way to
    # Step Functions (which then no longer knows the stopped execution's token)
    with FakeStepFunctions() as sfn:
        waiting = waiting_call(sandbox, monkeypatch, sfn)
        sfn.script(Reply(400, refusal("TaskDoesNotExist"), meanwhile=waiting.cancel))
        # When the owner approves it
        status, body = waiting.api.call("POST", waiting.path, {"approved": True})
    # Then the approval won: it stands, approved, and the run is shown as it now is, cancelled after it
    assert (status, body["status"]) == (200, "CANCELLED")
    assert (waiting.approval().status, waiting.approval().answered_by) == ("approved", "key-a")


def test_an_answer_sent_while_a_restarted_engine_resumes_the_wait_is_kept_for_it(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a waiting call whose wait has time left, and Step Functions that no longer knows its token
    # (a restarted local engine resumes the run under a new token a moment after it starts serving)
    with FakeStepFunctions() as sfn:
        waiting = waiting_call(sandbox, monkeypatch, sfn)
        sfn.script(Reply(400, refusal("TaskDoesNotExist")))
        # When the owner approves it, and then the resumed wait begins again under its new token
        status, _ = waiting.api.call("POST", waiting.path, {"approved": True})
        resumed = ApprovalWaitEvent.model_validate(waiting.item | {"task_token": "token-2"})
        with pytest.raises(ApprovalSettled):
            await_approval(resumed, waiting.runtime)
    # Then the approver is told it succeeded, and the wait begun again finds the call approved
    assert status == 200
    assert waiting.approval().status == "approved"
