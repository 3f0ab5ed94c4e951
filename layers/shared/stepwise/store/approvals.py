"""Tool calls paused for approval: one `APPROVAL#<iteration>#<index>` item per call, and META's status.

The item is written by the wait-for-approval task (with the task token that answers it), answered by the
API with a conditional update (pending -> approved or denied, so a second answer loses) in one transaction
with a check that the run is still open (so of an answer and the run's cancellation, one comes first), and
settled by ToolInvoke when the wait ended otherwise (timed out, or answered straight through Step Functions).
ToolInvoke marks the outcome it acts on consumed, after which the API never undoes the answer. META is
`WAITING_APPROVAL` while a call waits (in one transaction with a check that the call does) and back to
`RUNNING` once none does; both writes are conditional on those statuses, so they never reopen an ended run.

While it is pending the item also carries `waiting_owner` and `waiting_order`, the keys of the sparse
`WaitingApprovalsByOwner` index: every write that takes it out of `pending` removes `waiting_owner` in the
same update, and `reopen` sets it again, so the index holds exactly the owner's waiting calls with no write
of its own (`store/waiting_approvals.py` reads it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from stepwise.errors import StoreTransientError
from stepwise.models.approval import Approval, ApprovalStatus
from stepwise.models.messages import ToolCall
from stepwise.models.run import OPEN_STATUSES
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed, error_code

if TYPE_CHECKING:
    from stepwise.store.waiting_approvals import WaitingPage

APPROVAL_PREFIX = "APPROVAL#"
# An answer's transaction meeting another write of the call or its run at that instant is sent again this often.
_CONFLICTS_TOLERATED = 3


class ApprovalNotPending(Exception):
    """The call's approval was answered (or settled) first; `approval` is as it is now."""

    def __init__(self, approval: Approval) -> None:
        super().__init__(f"the approval of call {approval.call_id} is already {approval.status}")
        self.approval = approval


class RunEndedFirst(Exception):
    """The call's run ended (it was cancelled, or failed) before the answer could be recorded."""


def approval_sk(iteration: int, index: int) -> str:
    """Sort key of the approval of the `index`-th call of an iteration."""
    return f"{APPROVAL_PREFIX}{iteration:04d}#{index:02d}"


def _to_approval(item: dict[str, Any]) -> Approval:
    fields = {key: value for key, value in item.items() if key not in ("pk", "sk", "expires_at")}
    fields["arguments"] = json.loads(fields.get("arguments") or "{}")
    return Approval.model_validate(fields)


class ApprovalStore:
    """Approval items and the run's waiting status, on the conversation table."""

    def __init__(
        self,
        table: Table,
        *,
        now_iso: Callable[[], str],
    ) -> None:
        self._db = table
        self._now_iso = now_iso

    def _key(self, run_id: str, iteration: int, index: int) -> dict[str, Any]:
        return serialize_item({"pk": keys.run_pk(run_id), "sk": approval_sk(iteration, index)})

    def get(self, run_id: str, iteration: int, index: int) -> Approval | None:
        """The approval of one call, read consistently, or None."""
        item = self._db.call(
            "get_item", TableName=self._db.name, Key=self._key(run_id, iteration, index), ConsistentRead=True
        ).get("Item")
        return _to_approval(deserialize_item(item)) if item else None

    def list(self, run_id: str) -> list[Approval]:
        """Every approval of a run, in call order (one Query; a run has few)."""
        approvals: list[Approval] = []
        start: dict[str, Any] | None = None
        while True:
            response = self._db.call(
                "query",
                TableName=self._db.name,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={
                    ":pk": serialize_value(keys.run_pk(run_id)),
                    ":prefix": serialize_value(APPROVAL_PREFIX),
                },
                ConsistentRead=True,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            approvals += [_to_approval(deserialize_item(item)) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start:
                return approvals

    def waiting(self, owner: str, *, limit: int, after: str | None, now: float) -> WaitingPage:
        """Up to `limit` of `owner`'s calls waiting for approval, oldest first, after the `after` position
        (`store/waiting_approvals.py`)."""
        from stepwise.store.waiting_approvals import list_waiting  # only the API lists them

        return list_waiting(self._db, owner, limit=limit, after=after, now=now)

    def request(
        self,
        run_id: str,
        iteration: int,
        index: int,
        call: ToolCall,
        *,
        owner: str,
        token: str,
        now: float,
        timeout_at: float,
        expires_at: int,
    ) -> Approval:
        """Store `owner`'s call as waiting with `token` until `timeout_at` (and so in the owner's index of
        waiting calls); a call already waiting (a replayed wait) takes the new token and wait, unless its
        first wait has run out by `now`; one already answered, or run out, is returned as it is."""
        requested_at = self._now_iso()
        item = {
            "pk": keys.run_pk(run_id),
            "sk": approval_sk(iteration, index),
            "run_id": run_id,
            "iteration": iteration,
            "index": index,
            "call_id": call.id,
            "tool": call.name,
            "arguments": json.dumps(call.arguments),
            "status": "pending",
            "task_token": token,
            "requested_at": requested_at,
            "timeout_at": timeout_at,
            "expires_at": expires_at,
            "owner": owner,
            "waiting_owner": owner,
            "waiting_order": keys.waiting_order(requested_at, run_id, iteration, index),
        }
        if self._db.put_if_absent(item):
            return _to_approval(item)
        try:
            response = self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=self._key(run_id, iteration, index),
                UpdateExpression="SET task_token = :token, timeout_at = :timeout_at",
                ConditionExpression="#status = :pending AND timeout_at > :now",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":token": serialize_value(token),
                    ":timeout_at": serialize_value(timeout_at),
                    ":pending": serialize_value("pending"),
                    ":now": serialize_value(now),
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            answered = self.get(run_id, iteration, index)
            assert answered is not None  # the put found it, and approvals are never deleted
            return answered
        return _to_approval(deserialize_item(response["Attributes"]))

    def answer(
        self, approval: Approval, status: ApprovalStatus, *, reason: str | None, by: str | None = None
    ) -> Approval:
        """Record the answer if the call still waits with the same token and its run is still open.

        One transaction: the approval's update and a check of META's status, so an answer and a
        cancellation of the run (a write of META conditional on the same status) are never both
        recorded as first. `RunEndedFirst` when the run ended first, `ApprovalNotPending` when the call
        was answered or settled first.
        """
        sets: dict[str, Any] = {"status": status, "answered_at": self._now_iso()}
        if reason is not None:
            sets["reason"] = reason
        if by is not None:
            sets["answered_by"] = by
        opens = {f":open{index}": serialize_value(each) for index, each in enumerate(OPEN_STATUSES)}
        update = {
            "TableName": self._db.name,
            "Key": self._key(approval.run_id, approval.iteration, approval.index),
            "UpdateExpression": "SET " + ", ".join(f"#{key} = :{key}" for key in sets) + " REMOVE waiting_owner",
            "ConditionExpression": "attribute_exists(pk) AND #status = :pending AND task_token = :token",
            "ExpressionAttributeNames": {"#status": "status"} | {f"#{key}": key for key in sets},
            "ExpressionAttributeValues": {f":{key}": serialize_value(value) for key, value in sets.items()}
            | {":pending": serialize_value("pending"), ":token": serialize_value(approval.task_token)},
        }
        run_open = {
            "TableName": self._db.name,
            "Key": serialize_item({"pk": keys.run_pk(approval.run_id), "sk": keys.META_SK}),
            "ConditionExpression": f"#status IN ({', '.join(opens)})",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": opens,
        }
        for _ in range(_CONFLICTS_TOLERATED):
            try:
                self._db.call("transact_write_items", TransactItems=[{"Update": update}, {"ConditionCheck": run_open}])
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise
                call_reason, run_reason = (cause.get("Code") for cause in exc.response["CancellationReasons"])
                if run_reason == "ConditionalCheckFailed":
                    raise RunEndedFirst(f"run {approval.run_id} ended before the answer was recorded") from None
                if call_reason == "ConditionalCheckFailed":
                    current = self.get(approval.run_id, approval.iteration, approval.index)
                    raise ApprovalNotPending(current or approval) from None
                continue  # another write of the call or of its run at that instant (TransactionConflict)
            return approval.model_copy(update=sets)
        raise StoreTransientError(f"the answer to call {approval.call_id} kept meeting other writes of its run")

    def reopen(self, approval: Approval) -> Approval | None:
        """Undo an answer Step Functions could not be told (so the caller may try again); None once undone.

        An answer ToolInvoke has consumed is never undone (Step Functions had it, only its reply was lost),
        nor one settled otherwise since: the approval is then returned as it stands.
        """
        names = ["reason", "answered_by", "answered_at"]
        # back in its owner's index (a call stored before the index has no owner, and stays out of it)
        listed = {":owner": serialize_value(approval.owner)} if approval.owner else {}
        try:
            self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=self._key(approval.run_id, approval.iteration, approval.index),
                UpdateExpression="SET #status = :pending"
                + (", waiting_owner = :owner" if listed else "")
                + " REMOVE "
                + ", ".join(names),
                ConditionExpression="#status = :answered AND task_token = :token AND attribute_not_exists(consumed_at)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":pending": serialize_value("pending"),
                    ":answered": serialize_value(approval.status),
                    ":token": serialize_value(approval.task_token),
                }
                | listed,
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return self.get(approval.run_id, approval.iteration, approval.index) or approval
        return None

    def consume(self, approval: Approval) -> Approval:
        """Mark the outcome ToolInvoke acts on as consumed, if the approval still stands as `approval` says;
        `ApprovalNotPending`, with the approval as it now is, when it changed meanwhile (the API undid it)."""
        return self._update(
            approval,
            {"consumed_at": self._now_iso()},
            "#status = :seen AND task_token = :token",
            {":seen": approval.status, ":token": approval.task_token},
        )

    def settle(
        self, approval: Approval, status: ApprovalStatus, *, reason: str | None, overrule: bool = False
    ) -> Approval:
        """Record how a wait ended outside the API (timed out, or answered straight to Step Functions), if
        nobody answered first, or whatever was answered with `overrule` (the wait timed out before the
        answer reached Step Functions, which told the API so); returns the approval as it then stands."""
        sets: dict[str, Any] = {"status": status, "answered_at": self._now_iso()}
        if reason is not None:
            sets["reason"] = reason
        try:
            return self._update(approval, sets, "attribute_exists(sk)" if overrule else "#status = :pending")
        except ApprovalNotPending as first:
            return first.approval

    def _update(
        self, approval: Approval, sets: dict[str, Any], condition: str, expected: Mapping[str, Any] | None = None
    ) -> Approval:
        names = {"#status": "status"} | {f"#{key}": key for key in sets}
        values = {f":{key}": serialize_value(value) for key, value in sets.items()}
        if ":pending" in condition:
            values[":pending"] = serialize_value("pending")
        values |= {name: serialize_value(value) for name, value in (expected or {}).items()}
        try:
            response = self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=self._key(approval.run_id, approval.iteration, approval.index),
                # consumed or settled, the call no longer waits: out of its owner's index
                UpdateExpression="SET " + ", ".join(f"#{key} = :{key}" for key in sets) + " REMOVE waiting_owner",
                ConditionExpression=f"attribute_exists(pk) AND {condition}",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            current = self.get(approval.run_id, approval.iteration, approval.index)
            raise ApprovalNotPending(current or approval) from None
        return _to_approval(deserialize_item(response["Attributes"]))

    def _status_update(self, run_id: str, status: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        """The update of META's status to `status`, conditional on its being one of `allowed`."""
        values = {f":from{index}": serialize_value(each) for index, each in enumerate(allowed)}
        return {
            "TableName": self._db.name,
            "Key": serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK}),
            "UpdateExpression": "SET #status = :status, updated_at = :now",
            "ConditionExpression": f"attribute_exists(pk) AND #status IN ({', '.join(values)})",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values
            | {":status": serialize_value(status), ":now": serialize_value(self._now_iso())},
        }

    def _set_status(self, run_id: str, status: str, allowed: tuple[str, ...]) -> bool:
        try:
            self._db.call("update_item", **self._status_update(run_id, status, allowed))
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def withdraw(self, run_id: str) -> int:
        """Take the calls of an ended run that still wait out of their owner's index (the call itself stays
        pending: nothing answered it); how many were. One Query of the run's approvals, one update each."""
        withdrawn = 0
        for approval in self.list(run_id):
            if not approval.pending:
                continue
            try:
                self._db.call(
                    "update_item",
                    TableName=self._db.name,
                    Key=self._key(run_id, approval.iteration, approval.index),
                    UpdateExpression="REMOVE waiting_owner",
                    ConditionExpression="#status = :pending",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={":pending": serialize_value("pending")},
                )
            except ClientError as exc:
                if not condition_failed(exc):
                    raise
                continue  # settled meanwhile, which took it out already
            withdrawn += 1
        return withdrawn

    def mark_waiting(self, approval: Approval) -> bool:
        """META to WAITING_APPROVAL while `approval` still waits with its token, unless the run ended (or is not
        yet RUNNING); False when not changed. With the check of the call in one transaction, an answer stored
        just before (whose `mark_running_unless_waiting` found nothing to undo) leaves the run RUNNING."""
        waits = {
            "TableName": self._db.name,
            "Key": self._key(approval.run_id, approval.iteration, approval.index),
            "ConditionExpression": "#status = :pending AND task_token = :token",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":pending": serialize_value("pending"),
                ":token": serialize_value(approval.task_token),
            },
        }
        mark = self._status_update(approval.run_id, "WAITING_APPROVAL", ("RUNNING", "WAITING_APPROVAL"))
        for _ in range(_CONFLICTS_TOLERATED):
            try:
                self._db.call("transact_write_items", TransactItems=[{"Update": mark}, {"ConditionCheck": waits}])
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise
                reasons = [cause.get("Code") for cause in exc.response["CancellationReasons"]]
                if "ConditionalCheckFailed" in reasons:
                    return False
                continue  # another write of the run or the call at that instant (TransactionConflict)
            return True
        raise StoreTransientError(f"marking run {approval.run_id} waiting kept meeting other writes of it")

    def mark_running_unless_waiting(self, run_id: str) -> bool:
        """META back to RUNNING when no call of the run waits for approval any more.

        A parallel call may begin to wait between the listing and the write, its own mark to WAITING_APPROVAL
        then undone by this one; so once the run is RUNNING the calls are listed again, and a call found
        waiting marks it back (one more Query, only when the run's last wait ended).
        """
        if any(approval.pending for approval in self.list(run_id)):
            return False
        if not self._set_status(run_id, "RUNNING", ("WAITING_APPROVAL",)):
            return False
        waiting = next((approval for approval in self.list(run_id) if approval.pending), None)
        if waiting is not None:
            self.mark_waiting(waiting)
            return False
        return True
