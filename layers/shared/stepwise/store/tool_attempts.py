"""Tool calls that may change something outside, recorded before they are sent: `ATTEMPT#<iteration>#<index>`.

The observation message is a call's commit record: once it is stored, a retried step replays it and
calls nothing. Between the request leaving and that put, a crash (a killed `stepwise serve`, a Lambda
timeout) leaves no trace of the call, and the retried step would send it again. So a call that may
change something has its start put here first (one conditional put); a step that finds the start but
no observation knows an earlier attempt may have reached the receiver, and does not send it blindly
again (see `stepwise.steps.tool_attempts`). Calls that change nothing (a GET) write nothing here.

Sort keys start with `ATTEMPT#`, before `META`, so no read of the conversation or the trace sees them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.table import Table
from stepwise.store.views import RunRef

ATTEMPT_PREFIX = "ATTEMPT#"


def attempt_sk(iteration: int, index: int) -> str:
    """Sort key of the attempts of the `index`-th call of an iteration."""
    return f"{ATTEMPT_PREFIX}{iteration:04d}#{index:02d}"


@dataclass(frozen=True)
class CallStart:
    """A call's recorded start: its idempotency key, and how many attempts were recorded before this one."""

    idempotency_key: str
    earlier_attempts: int
    started_at: str

    @property
    def first(self) -> bool:
        """True when no earlier attempt of the call was recorded."""
        return self.earlier_attempts == 0


class ToolAttemptStore:
    """Attempt records of the calls that may change something, on the conversation table."""

    def __init__(
        self,
        table: Table,
        *,
        now_iso: Callable[[], str],
    ) -> None:
        self._db = table
        self._now_iso = now_iso

    def begin(
        self, run: RunRef, iteration: int, index: int, *, call_id: str, tool: str, idempotency_key: str
    ) -> CallStart:
        """Record that the call is about to be sent, unless an earlier attempt was recorded; say which.

        One conditional put on the first attempt. When an earlier attempt is found (the step was
        retried or resumed without the call's observation), it is read back (one GetItem) and returned
        unchanged: the caller decides whether a new attempt goes out (`again`).
        """
        now = self._now_iso()
        item = {
            "pk": keys.run_pk(run.run_id),
            "sk": attempt_sk(iteration, index),
            "call_id": call_id,
            "tool": tool,
            "idempotency_key": idempotency_key,
            "attempts": 1,
            "started_at": now,
            "expires_at": run.expires_at,
        }
        if self._db.put_if_absent(item):
            return CallStart(idempotency_key=idempotency_key, earlier_attempts=0, started_at=now)
        found = self._db.call(
            "get_item", TableName=self._db.name, Key=self._key(run.run_id, iteration, index), ConsistentRead=True
        )["Item"]
        earlier = deserialize_item(found)
        return CallStart(
            idempotency_key=str(earlier["idempotency_key"]),
            earlier_attempts=int(earlier["attempts"]),
            started_at=str(earlier["started_at"]),
        )

    def again(self, run_id: str, iteration: int, index: int) -> int:
        """Record one more attempt of a call already started (sent again with its key); its number."""
        response = self._db.call(
            "update_item",
            TableName=self._db.name,
            Key=self._key(run_id, iteration, index),
            UpdateExpression="SET attempts = attempts + :one, last_started_at = :now",
            ExpressionAttributeValues={":one": serialize_value(1), ":now": serialize_value(self._now_iso())},
            ReturnValues="UPDATED_NEW",
        )
        return int(deserialize_item(response["Attributes"])["attempts"])

    def _key(self, run_id: str, iteration: int, index: int) -> dict[str, Any]:
        return serialize_item({"pk": keys.run_pk(run_id), "sk": attempt_sk(iteration, index)})
