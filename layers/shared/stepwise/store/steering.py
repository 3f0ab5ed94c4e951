"""Steering a running run: messages a person posts to it, and pausing it at an iteration boundary.

A posted message is an item of its own under `MSG$<posted_at>#<id>` (`keys.inbox_sk`), put in one transaction
with a check that META's status is open (so a message and the run's end are never both first). That key
sorts after every message and inside the range LLMCall's conversation Query reads anyway
(`stepwise.store.history`), so a run that receives no message reads nothing more. LLMCall moves each message
it finds into the conversation at the iteration boundary it saw it (`keys.STEER_FIRST_SLOT` on), with its
`message` trace step, in one transaction with the delete of the posted item: a retry finds it moved.

A pause lives on META (`pause`): the API sets it, Parse (which reads META every iteration) carries it into
the payload, and IterationGuard's wait task stores its token there and marks the run PAUSED; resuming
removes it, conditional on the token, so of a resume and a cancellation one comes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from stepwise.models.messages import ChatMessage
from stepwise.models.pause import PauseState
from stepwise.models.run import OPEN_STATUSES
from stepwise.models.step_record import StepRecord
from stepwise.store import keys
from stepwise.store.codec import serialize_item, serialize_value
from stepwise.store.history import PostedMessage
from stepwise.store.items import message_item
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed, error_code
from stepwise.store.views import RunRef


class RunClosed(Exception):
    """The run ended (or is not there) before the write could be recorded."""


def _open_values() -> dict[str, Any]:
    return {f":open{index}": serialize_value(status) for index, status in enumerate(OPEN_STATUSES)}


def _open_condition() -> str:
    return f"#status IN ({', '.join(_open_values())})"


class SteeringStore:
    """Posted messages and pauses, on the conversation table."""

    def __init__(self, table: Table, *, now_iso: Callable[[], str]) -> None:
        self._db = table
        self._now_iso = now_iso

    def _meta_key(self, run_id: str) -> dict[str, Any]:
        return serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK})

    def post(self, run: RunRef, message_id: str, content: str, *, by: str) -> PostedMessage:
        """Store a message for the run's next model call; `RunClosed` when the run ended first."""
        posted_at = self._now_iso()
        sort_key = keys.inbox_sk(posted_at, message_id)
        item = {
            "pk": keys.run_pk(run.run_id),
            "sk": sort_key,
            "role": "user",
            "content": content,
            "message_id": message_id,
            "posted_by": by,
            "posted_at": posted_at,
            "expires_at": run.expires_at,
        }
        check = {
            "TableName": self._db.name,
            "Key": self._meta_key(run.run_id),
            "ConditionExpression": _open_condition(),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": _open_values(),
        }
        put = {"TableName": self._db.name, "Item": self._db.fitted(item)}
        try:
            self._db.call("transact_write_items", TransactItems=[{"ConditionCheck": check}, {"Put": put}])
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
            raise RunClosed(f"run {run.run_id} ended before the message was stored") from None
        return PostedMessage(sort_key, message_id, content, by, posted_at)

    def waiting(self, run_id: str) -> list[PostedMessage]:
        """The messages posted to the run that no model call has seen yet, oldest first (one Query)."""
        return [
            PostedMessage(
                sk=item["sk"],
                message_id=item.get("message_id", ""),
                content=item.get("content", ""),
                posted_by=item.get("posted_by", ""),
                posted_at=item.get("posted_at", ""),
            )
            for item in self._db.query(keys.run_pk(run_id), keys.INBOX_PREFIX)
        ]

    def deliver(self, run: RunRef, posted: PostedMessage, iteration: int, slot: int, step: StepRecord) -> bool:
        """Move a posted message into the conversation at (`iteration`, `slot`) with its trace step, deleting
        the posted item in the same transaction; False when another attempt moved it first."""
        message = ChatMessage(role="user", content=posted.content)
        item = message_item(run.run_id, iteration, slot, message, run.expires_at)
        item |= {"trace": step.model_dump_json(exclude_none=True)}
        put = {
            "TableName": self._db.name,
            "Item": self._db.fitted(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        delete = {
            "TableName": self._db.name,
            "Key": serialize_item({"pk": keys.run_pk(run.run_id), "sk": posted.sk}),
            "ConditionExpression": "attribute_exists(pk)",
        }
        try:
            self._db.call("transact_write_items", TransactItems=[{"Put": put}, {"Delete": delete}])
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
            return False
        return True

    def _update_meta(self, run_id: str, expression: str, condition: str, values: dict[str, Any]) -> bool:
        names = {"#status": "status", "#pause": "pause", "#token": "token"}
        text = expression + condition
        # DynamoDB refuses an empty map of values: an update with none sends none
        given = {"ExpressionAttributeValues": {name: serialize_value(value) for name, value in values.items()}}
        try:
            self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=self._meta_key(run_id),
                UpdateExpression=expression,
                ConditionExpression=f"attribute_exists(pk) AND {condition}",
                ExpressionAttributeNames={name: value for name, value in names.items() if name in text},
                **(given if values else {}),
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def request_pause(self, run_id: str, *, by: str) -> bool:
        """Ask the open run to pause at its next iteration boundary; False when it ended (or a pause was
        asked already: the first one stands)."""
        pause = PauseState(requested_by=by, requested_at=self._now_iso())
        values = {":pause": pause.model_dump(exclude_none=True)} | {
            name: status for name, status in zip(_open_values(), OPEN_STATUSES, strict=True)
        }
        return self._update_meta(
            run_id, "SET #pause = :pause", f"{_open_condition()} AND attribute_not_exists(#pause)", values
        )

    def begin_wait(self, run_id: str, iteration: int, token: str, timeout_at: float) -> bool:
        """Mark the run PAUSED, its wait under `token`, if a pause is asked and the run is RUNNING (or PAUSED:
        a retried wait); False otherwise (resumed first, or ended)."""
        values = {
            ":paused": "PAUSED",
            ":running": "RUNNING",
            ":iteration": iteration,
            ":token": token,
            ":since": self._now_iso(),
            ":timeout": timeout_at,
        }
        return self._update_meta(
            run_id,
            "SET #status = :paused, #pause.iteration = :iteration, #pause.#token = :token, "
            "#pause.waiting_since = :since, #pause.timeout_at = :timeout, updated_at = :since",
            "#status IN (:running, :paused) AND attribute_exists(#pause)",
            values,
        )

    def resume(self, run_id: str, token: str | None) -> bool:
        """Take the pause off: a waiting run (PAUSED, `token`: its wait's) back to RUNNING, or the pause of a run
        not waiting withdrawn (`token` None); False when the run is not as that says."""
        if token is None:
            # a run not waiting (yet, or again after `stepwise serve` restarted it) under any token
            return self._update_meta(
                run_id, "REMOVE #pause", "attribute_exists(#pause) AND #status <> :paused", {":paused": "PAUSED"}
            )
        values = {":running": "RUNNING", ":paused": "PAUSED", ":token": token, ":now": self._now_iso()}
        return self._update_meta(
            run_id,
            "SET #status = :running, updated_at = :now REMOVE #pause",
            "#status = :paused AND #pause.#token = :token",
            values,
        )

    def undo_resume(self, run_id: str, pause: PauseState) -> bool:
        """Put back a waiting pause whose resume Step Functions could not be told (it may be sent again);
        False when the run changed since."""
        stored = pause.model_dump(exclude_none=True) | {"token": pause.token}
        values = {":paused": "PAUSED", ":running": "RUNNING", ":pause": stored}
        return self._update_meta(
            run_id,
            "SET #status = :paused, #pause = :pause",
            "#status = :running AND attribute_not_exists(#pause)",
            values,
        )

    def end_wait(self, run_id: str) -> bool:
        """After a wait that ended without a resume (its deadline, or a workflow that cannot wait): the run
        back to RUNNING, its pause removed; False when it was not PAUSED."""
        values = {":running": "RUNNING", ":paused": "PAUSED", ":now": self._now_iso()}
        return self._update_meta(
            run_id, "SET #status = :running, updated_at = :now REMOVE #pause", "#status = :paused", values
        )
