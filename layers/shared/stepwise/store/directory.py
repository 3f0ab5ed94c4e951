"""The runs of an owner, and their cancellation: reads and writes of META beyond the loop's own.

A listing never scans: an owner's runs come from the sparse `RunsByOwner` index (partition `owner`,
sort key `run_order` = `<created_at>#<run_id>`, on META items only), newest first; a session's runs from
the owner's own partition of the session (`keys.session_pk`), whose sort keys are ordered the same way,
then their METAs in one batch.
Either way the position in the listing is a `run_order`, so one cursor format serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from stepwise.errors import RunNotFound
from stepwise.models.run import OPEN_STATUSES, RunMeta, RunSummary, RunUsage
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.items import to_meta
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed

if TYPE_CHECKING:
    # The listing (its filters and paging) is imported by the methods that list: only the API lists runs,
    # so no state step's handler loads it.
    from stepwise.store.run_filters import RunFilter
    from stepwise.store.run_listing import RunPage


class RunAlreadyEnded(Exception):
    """The run cannot be cancelled: it ended first. `meta` is the run as it ended."""

    def __init__(self, meta: RunMeta) -> None:
        super().__init__(f"run {meta.run_id} already ended {meta.status}")
        self.meta = meta


class RunDirectory:
    """Lists an owner's runs and cancels them, on the conversation table."""

    def __init__(
        self,
        table: Table,
        *,
        now_iso: Callable[[], str],
    ) -> None:
        self._db = table
        self._now_iso = now_iso

    def list_runs(
        self,
        owner: str,
        *,
        limit: int,
        session_id: str | None = None,
        before: str | None = None,
        filters: RunFilter | None = None,
        accept: Callable[[RunSummary], bool] = lambda _summary: True,
    ) -> RunPage:
        """Up to `limit` of `owner`'s runs that `filters` and `accept` keep, newest first, below the `before`
        position; the work per request is bounded (`stepwise.store.run_listing`)."""
        from stepwise.store.run_filters import RunFilter
        from stepwise.store.run_listing import RunLister

        lister = RunLister(self._db, owner, filters or RunFilter(), session_id=session_id)
        return lister.page(limit=limit, before=before, accept=accept)

    def answers(self, run_ids: list[str]) -> dict[str, str | None]:
        """The stored answer of each of `run_ids` that exists (None for a run without one), read in
        batches: what a listing reads of a run stored before outcomes were recorded, to tell its outcome."""
        from stepwise.store.run_listing import read_metas

        metas = read_metas(self._db, run_ids, projection=("run_id", "answer"))
        return {run_id: None if item.get("answer") is None else str(item["answer"]) for run_id, item in metas.items()}

    def cancel_run(self, run_id: str, *, by: str, usage: RunUsage, tools: list[str] | None = None) -> RunMeta:
        """Record the run CANCELLED by `by` with what it spent, if it is still open; `RunAlreadyEnded` if
        it ended first.

        The update is conditional on the status, as every write of the loop to META is: once it is
        CANCELLED, no step can begin an iteration or record an outcome.
        """
        now = self._now_iso()
        sets = {
            "status": "CANCELLED",
            "stop_reason": "cancelled",
            # a cancelled run gives no answer
            "outcome": "none",
            "cancelled_by": by,
            "cancelled_at": now,
            "updated_at": now,
            "usage": usage.model_dump(),
        } | ({"tools": tools} if tools else {})
        try:
            response = self._call_update(run_id, sets)
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            current = self.get_meta(run_id)
            if current is None:
                raise RunNotFound(f"run {run_id} not found") from None
            raise RunAlreadyEnded(current) from None
        return to_meta(deserialize_item(response["Attributes"]))

    def _call_update(self, run_id: str, sets: dict[str, Any]) -> dict[str, Any]:
        names = {f"#{key}": key for key in sets}
        values = {f":{key}": serialize_value(value) for key, value in sets.items()}
        values |= {f":open{index}": serialize_value(status) for index, status in enumerate(OPEN_STATUSES)}
        open_values = ", ".join(f":open{index}" for index in range(len(OPEN_STATUSES)))
        return self._db.call(
            "update_item",
            TableName=self._db.name,
            Key=serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK}),
            UpdateExpression="SET " + ", ".join(f"#{key} = :{key}" for key in sets),
            ConditionExpression=f"attribute_exists(pk) AND #status IN ({open_values})",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )

    def get_meta(self, run_id: str) -> RunMeta | None:
        """The META of a run, read consistently, or None."""
        response = self._db.call(
            "get_item",
            TableName=self._db.name,
            Key=serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return to_meta(deserialize_item(item)) if item else None
