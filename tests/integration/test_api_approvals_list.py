"""What an approver is shown and what an answer names, through the API function of template.yaml (moto
holds the table, Step Functions a loopback fake): `GET /v1/approvals` lists the caller's waiting calls and no
one else's, arguments holding invisible characters are shown escaped, and an answer naming other arguments
than the waiting call's is refused with 409 `approval_stale`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from stepwise.models.approval import arguments_sha256
from tests.integration.test_api_approval_delivery import WaitingCall, waiting_call
from tests.integration.test_api_handler import TABLE
from tests.support.stepfunctions_fake import FakeStepFunctions

# The model asks to launch at a target whose last four characters are shown reversed by a bidi override.
TARGET = "acct-1234\u202e0009\u202c"
SPOOFED = {
    "models": {
        "m": {
            "provider": "scripted",
            "scenarios": [
                {
                    "turns": [
                        {
                            "content": "```json\n"
                            + json.dumps({"action": "launch", "action_input": {"target": TARGET}})
                            + "\n```"
                        }
                    ]
                }
            ],
        }
    },
    "tools": {"python": [{"module": "launch_tools", "requires_approval": True}]},
    "profiles": {"default": {"model": "m", "strategy": "react", "limits": {"max_execution_seconds": 600}}},
}


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[WaitingCall, FakeStepFunctions]]:
    """A run of `key-a` whose call of `launch` at TARGET waits for approval."""
    with mock_aws(), FakeStepFunctions() as sfn:
        yield waiting_call(tmp_path, monkeypatch, sfn, SPOOFED), sfn
    sys.modules.pop("launch_tools", None)
    while str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def test_the_callers_waiting_call_is_listed_with_its_arguments_escaped_for_display(
    waiting: tuple[WaitingCall, FakeStepFunctions],
) -> None:
    call, _ = waiting
    # When the owner, and then another caller, list the calls waiting for them
    status, mine = call.api.call("GET", "/v1/approvals")
    _, theirs = call.api.call("GET", "/v1/approvals", key="key-b")
    # Then the owner sees the one call, raw arguments as the tool receives them, and the override shown as
    # an escape that still parses to the same arguments; the other caller sees nothing
    assert status == 200 and theirs["approvals"] == []
    [listed] = mine["approvals"]
    assert (listed["run_id"], listed["call_id"], listed["tool"]) == (call.item["run_id"], "call_1_0", "launch")
    assert listed["arguments"] == {"target": TARGET}
    assert listed["arguments_display"] == '{"target": "acct-1234\\u202e0009\\u202c"}'
    assert "\u202e" not in listed["arguments_display"]
    assert json.loads(listed["arguments_display"]) == listed["arguments"]
    assert listed["arguments_sha256"] == arguments_sha256({"target": TARGET})
    # and the run's own view shows the same
    _, run = call.api.call("GET", f"/v1/runs/{call.item['run_id']}")
    [pending] = run["pending_approvals"]
    assert (pending["arguments_display"], pending["arguments_sha256"]) == (
        listed["arguments_display"],
        listed["arguments_sha256"],
    )


def test_an_answer_naming_other_arguments_is_stale_and_the_shown_hash_is_accepted(
    waiting: tuple[WaitingCall, FakeStepFunctions],
) -> None:
    call, sfn = waiting
    # Given the hash of the arguments the approver believed they saw (the override not applied)
    believed = arguments_sha256({"target": "acct-12349000"})
    # When they approve with it
    status, body = call.api.call("POST", call.path, {"approved": True, "arguments_sha256": believed})
    # Then the answer is refused as stale, naming the current hash; nothing was stored or sent
    assert (status, body["error"]["type"]) == (409, "approval_stale")
    assert body["error"]["details"]["arguments_sha256"] == arguments_sha256({"target": TARGET})
    assert (call.approval().status, sfn.requests) == ("pending", [])
    # When they approve with the hash the views show, and the execution goes on to run the call
    shown = call.approval().arguments_sha256
    body = {"approved": True, "reason": "checked the account", "arguments_sha256": shown}
    status, _ = call.api.call("POST", call.path, body)
    call.tool_invoke(sfn.requests[0])
    # Then Step Functions was told, and the call's step of the trace says who approved it, when and why
    assert status == 200
    assert [request["operation"] for request in sfn.requests] == ["SendTaskSuccess"]
    [step] = [step for step in call.runtime.store.list_steps(call.item["run_id"]) if step.kind == "tool"]
    assert step.approval is not None and step.ok
    assert (step.approval.status, step.approval.answered_by, step.approval.reason) == (
        "approved",
        "key-a",
        "checked the account",
    )
    assert step.approval.answered_at is not None and step.approval.arguments_sha256 == shown


def test_cancelling_a_waiting_run_takes_its_call_out_of_the_index(
    waiting: tuple[WaitingCall, FakeStepFunctions],
) -> None:
    call, _ = waiting
    # When the owner cancels the waiting run
    status, _ = call.api.call("POST", f"/v1/runs/{call.item['run_id']}/cancel")
    # Then the call is no longer listed, nor held by the index at all, and stays unanswered on its run
    _, listed = call.api.call("GET", "/v1/approvals")
    entries = call.api.dynamodb.query(
        TableName=TABLE,
        IndexName="WaitingApprovalsByOwner",
        KeyConditionExpression="waiting_owner = :owner",
        ExpressionAttributeValues={":owner": {"S": "key-a"}},
    )
    assert (status, listed["approvals"], entries["Count"]) == (200, [], 0)
    assert call.approval().status == "pending"
