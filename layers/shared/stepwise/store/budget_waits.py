"""A run waiting at its budget (`on_budget: ask`): META's `budget_wait` and status, written conditionally.

A run waits at most once at a time, so the wait lives on META (one `UpdateItem` each way) rather than in
an item of its own: IterationGuard's wait task sets `WAITING_BUDGET` and the wait with its task token; the
API answers it with an update conditional on that status and that token (of two answers, or an answer and
a cancellation, one comes first), raising the caps in META's `limits` in the same write, so a resumed run
reads the raised budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from stepwise.models.budget import BudgetAnswer, BudgetWait
from stepwise.store import keys
from stepwise.store.codec import serialize_item, serialize_value
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed

_NAMES = {"#status": "status", "#wait": "budget_wait", "#token": "token", "#limits": "limits"}


class BudgetWaitChanged(Exception):
    """The run is no longer waiting at its budget under that token: answered, resumed or ended first."""


class BudgetWaitStore:
    """META's wait at the budget, on the conversation table."""

    def __init__(self, table: Table, *, now_iso: Callable[[], str]) -> None:
        self._db = table
        self._now_iso = now_iso

    def _update(self, run_id: str, expression: str, condition: str, values: dict[str, Any]) -> bool:
        try:
            self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK}),
                UpdateExpression=expression,
                ConditionExpression=f"attribute_exists(pk) AND {condition}",
                ExpressionAttributeNames={name: _NAMES[name] for name in _NAMES if name in expression + condition},
                ExpressionAttributeValues={name: serialize_value(value) for name, value in values.items()},
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def begin(self, run_id: str, wait: BudgetWait, token: str) -> bool:
        """Mark the run WAITING_BUDGET with `wait` (asked now) and its task token, unless it ended (or is not
        RUNNING nor already waiting at its budget, as a retried wait finds it); False when not changed."""
        stored = wait.model_dump(exclude_none=True) | {"token": token, "requested_at": self._now_iso()}
        return self._update(
            run_id,
            "SET #status = :waiting, #wait = :wait, updated_at = :now",
            "#status IN (:running, :waiting)",
            {":waiting": "WAITING_BUDGET", ":running": "RUNNING", ":wait": stored, ":now": self._now_iso()},
        )

    def answer(
        self,
        run_id: str,
        token: str,
        answer: BudgetAnswer,
        *,
        by: str,
        caps: dict[str, int | float],
        added: dict[str, int | float],
    ) -> str:
        """Record the answer to the wait under `token`, setting the raised `caps` (`max_total_tokens`,
        `max_cost_usd`) in META's limits, and the run back to RUNNING; returns when it was answered.
        `BudgetWaitChanged` when the run no longer waits under that token."""
        answered_at = self._now_iso()
        sets = {"answer": answer, "answered_by": by, "answered_at": answered_at} | {
            f"added_{name}": value for name, value in added.items()
        }
        values: dict[str, Any] = {f":w_{name}": value for name, value in sets.items()}
        values |= {f":c_{name}": value for name, value in caps.items()}
        expression = "SET #status = :running, updated_at = :now, " + ", ".join(
            [f"#wait.{name} = :w_{name}" for name in sets] + [f"#limits.{name} = :c_{name}" for name in caps]
        )
        values |= {":running": "RUNNING", ":waiting": "WAITING_BUDGET", ":now": answered_at, ":token": token}
        if not self._update(run_id, expression, "#status = :waiting AND #wait.#token = :token", values):
            raise BudgetWaitChanged(f"run {run_id} is no longer waiting at its budget")
        return answered_at

    def undo(self, run_id: str, token: str, answered_at: str, caps: dict[str, int | float]) -> bool:
        """Put back the wait an answer Step Functions could not be told was recorded for (the caps as they
        were), so the answer may be sent again; False when the run changed since (resumed, or ended)."""
        values: dict[str, Any] = {f":c_{name}": value for name, value in caps.items()}
        sets = ", ".join(["#status = :waiting"] + [f"#limits.{name} = :c_{name}" for name in caps])
        removed = "#wait.answer, #wait.answered_by, #wait.answered_at, #wait.added_tokens, #wait.added_usd"
        values |= {":running": "RUNNING", ":waiting": "WAITING_BUDGET", ":token": token, ":at": answered_at}
        return self._update(
            run_id,
            f"SET {sets} REMOVE {removed}",
            "#status = :running AND #wait.#token = :token AND #wait.answered_at = :at",
            values,
        )

    def resume(self, run_id: str) -> bool:
        """The run back to RUNNING after a wait nobody answered through the API (it timed out, or the workflow
        could not wait); False when it was not waiting at its budget."""
        return self._update(
            run_id,
            "SET #status = :running, updated_at = :now",
            "#status = :waiting",
            {":running": "RUNNING", ":waiting": "WAITING_BUDGET", ":now": self._now_iso()},
        )
