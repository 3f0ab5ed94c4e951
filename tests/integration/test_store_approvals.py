"""Approvals in the store against moto: one answer wins, an answer and the run's cancellation are ordered
(one of them first), a replayed wait takes the new token, and the run's status follows whether a call still
waits."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.run import RunUsage
from stepwise.store import ConversationStore, RunAlreadyEnded
from stepwise.store.approvals import ApprovalNotPending, RunEndedFirst
from tests.integration.test_store import make_meta

CALL = ToolCall(id="call_1_0", name="transfer", arguments={"amount": 5})


@pytest.fixture
def store(dynamodb_table: tuple[Any, str]) -> ConversationStore:
    client, table = dynamodb_table
    created = ConversationStore(client, table, clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    created.create_run(make_meta("run1"), [ChatMessage(role="user", content="pay")])
    created.begin_iteration("run1", 1)
    return created


def _request(store: ConversationStore, token: str, *, now: float = 1_900_000_000.0) -> Any:
    return store.approvals.request(
        "run1", 1, 0, CALL, owner="alice", token=token, now=now, timeout_at=now + 600, expires_at=2_000_000_000
    )


def test_a_waiting_call_marks_the_run_waiting_until_it_is_answered(store: ConversationStore) -> None:
    # Given a call stored as waiting, and the run marked so
    approval = _request(store, "token-1")
    store.approvals.mark_waiting(approval)
    waiting = store.require_run("run1").status
    # When it is approved and no other call waits
    store.approvals.answer(approval, "approved", reason="fine", by="alice")
    store.approvals.mark_running_unless_waiting("run1")
    # Then the run was WAITING_APPROVAL, and is RUNNING again with the answer stored
    assert (waiting, store.require_run("run1").status) == ("WAITING_APPROVAL", "RUNNING")
    [stored] = store.approvals.list("run1")
    assert (stored.status, stored.reason, stored.answered_by, stored.arguments) == (
        "approved",
        "fine",
        "alice",
        {"amount": 5},
    )


def test_of_two_answers_only_the_first_is_stored(store: ConversationStore) -> None:
    # Given a waiting call answered once
    approval = _request(store, "token-1")
    store.approvals.answer(approval, "denied", reason="no")
    # When it is answered again / Then the second answer is refused with the approval as it stands
    with pytest.raises(ApprovalNotPending) as second:
        store.approvals.answer(approval, "approved", reason=None)
    assert second.value.approval.status == "denied"


def test_an_answer_after_the_runs_cancellation_is_refused_and_not_stored(store: ConversationStore) -> None:
    # Given a waiting call whose run is cancelled
    approval = _request(store, "token-1")
    store.directory.cancel_run("run1", by="alice", usage=RunUsage())
    # When the call is approved / Then the answer is refused (the run ended first) and the call is as it was
    with pytest.raises(RunEndedFirst):
        store.approvals.answer(approval, "approved", reason=None, by="alice")
    assert store.approvals.list("run1")[0].status == "pending"


def test_a_cancellation_after_an_answer_ends_the_run_and_the_answer_stands(store: ConversationStore) -> None:
    # Given a waiting call, approved
    approval = _request(store, "token-1")
    store.approvals.answer(approval, "approved", reason=None, by="alice")
    # When the run is cancelled, and cancelled again
    cancelled = store.directory.cancel_run("run1", by="bob", usage=RunUsage())
    with pytest.raises(RunAlreadyEnded):
        store.directory.cancel_run("run1", by="bob", usage=RunUsage())
    # Then the first cancellation ended the run, and the answer recorded before it stands
    assert cancelled.status == "CANCELLED"
    assert store.approvals.list("run1")[0].status == "approved"


def test_a_replayed_wait_takes_the_new_token_and_an_answered_one_is_kept(store: ConversationStore) -> None:
    # Given a call waiting with one token
    _request(store, "token-1")
    # When its wait is replayed (a restarted engine) with another token
    replayed = _request(store, "token-2")
    # Then it waits with the new token; once answered, a further replay returns the answer untouched
    assert (replayed.status, replayed.task_token) == ("pending", "token-2")
    store.approvals.answer(replayed, "approved", reason=None)
    assert _request(store, "token-3").status == "approved"


def test_a_replayed_wait_after_its_time_ran_out_keeps_the_old_token(store: ConversationStore) -> None:
    # Given a call waiting 600 s with one token
    _request(store, "token-1", now=1_900_000_000.0)
    # When its wait is replayed after those 600 s
    replayed = _request(store, "token-2", now=1_900_000_601.0)
    # Then it is returned as it was, so the wait can be settled as timed out rather than begin again
    assert (replayed.status, replayed.task_token, replayed.timeout_at) == ("pending", "token-1", 1_900_000_600.0)


def test_an_answer_that_lost_to_a_timeout_is_overruled(store: ConversationStore) -> None:
    # Given a call whose answer was stored but reached Step Functions after its wait timed out
    answered = store.approvals.answer(_request(store, "token-1"), "approved", reason=None)
    # When ToolInvoke settles it as timed out, overruling / Then the stored outcome is the timeout
    assert store.approvals.settle(answered, "timed_out", reason=None, overrule=True).status == "timed_out"


def test_the_run_status_is_never_reopened_once_the_run_ended(store: ConversationStore) -> None:
    # Given a run that ended
    store.finish_run(store.require_run("run1"), "SUCCEEDED", stop_reason="final_answer", answer="done")
    # When a late wait tries to mark it waiting / Then nothing changes
    assert store.approvals.mark_waiting(_request(store, "token-1")) is False
    assert store.require_run("run1").status == "SUCCEEDED"


def test_a_call_that_begins_to_wait_while_a_sibling_marks_the_run_running_keeps_it_waiting(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run whose call 0 waited and was answered, and whose parallel call 1 begins to wait just as call
    # 0's settling marks the run RUNNING: after its listing found nothing waiting, before its write
    first = _request(store, "token-1")
    store.approvals.mark_waiting(first)
    store.approvals.answer(first, "approved", reason=None, by="alice")
    client, _ = dynamodb_table
    sibling = ToolCall(id="call_1_1", name="transfer", arguments={"amount": 7})

    def sibling_begins_to_wait(params: dict[str, Any], **_: Any) -> None:
        if params.get("ExpressionAttributeValues", {}).get(":status") != {"S": "RUNNING"}:
            return
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", sibling_begins_to_wait)
        now = 1_900_000_000.0
        waiting = store.approvals.request(
            "run1",
            1,
            1,
            sibling,
            owner="alice",
            token="token-2",
            now=now,
            timeout_at=now + 600,
            expires_at=2_000_000_000,
        )
        store.approvals.mark_waiting(waiting)

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", sibling_begins_to_wait)
    # When call 0's settling marks the run running unless a call waits
    store.approvals.mark_running_unless_waiting("run1")
    # Then the run is WAITING_APPROVAL, as call 1 waits (it read RUNNING while a call waited)
    assert [approval.pending for approval in store.approvals.list("run1")] == [False, True]
    assert store.require_run("run1").status == "WAITING_APPROVAL"


def test_a_sibling_answered_as_the_settling_marks_the_run_back_waiting_leaves_it_running(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given call 0 answered, and a parallel call 1 stored as waiting just as call 0's settling marks the run
    # RUNNING; and call 1 answered (the API marking the run running unless a call waits) just before the
    # settling, having found it waiting, marks the run back WAITING_APPROVAL
    first = _request(store, "token-1")
    store.approvals.mark_waiting(first)
    store.approvals.answer(first, "approved", reason=None, by="alice")
    client, _ = dynamodb_table
    now = 1_900_000_000.0
    sibling = ToolCall(id="call_1_1", name="transfer", arguments={"amount": 7})

    def sibling_begins_to_wait(params: dict[str, Any], **_: Any) -> None:
        if params.get("ExpressionAttributeValues", {}).get(":status") != {"S": "RUNNING"}:
            return
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", sibling_begins_to_wait)
        store.approvals.request(
            "run1", 1, 1, sibling, owner="alice", token="t2", now=now, timeout_at=now + 600, expires_at=2_000_000_000
        )
        client.meta.events.register("before-parameter-build.dynamodb", sibling_answered)

    def sibling_answered(params: dict[str, Any], **_: Any) -> None:
        if '":status": {"S": "WAITING_APPROVAL"}' not in json.dumps(params):
            return
        client.meta.events.unregister("before-parameter-build.dynamodb", sibling_answered)
        [waiting] = [approval for approval in store.approvals.list("run1") if approval.pending]
        store.approvals.answer(waiting, "approved", reason=None, by="alice")
        store.approvals.mark_running_unless_waiting("run1")

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", sibling_begins_to_wait)
    # When call 0's settling marks the run running unless a call waits
    store.approvals.mark_running_unless_waiting("run1")
    # Then no call waits, and the run is RUNNING: not WAITING_APPROVAL with nothing to approve
    assert [approval.status for approval in store.approvals.list("run1")] == ["approved", "approved"]
    assert store.require_run("run1").status == "RUNNING"
