"""The runs of an owner, and their cancellation: reads and writes of META beyond the loop's own.

A listing never scans: an owner's runs come from the sparse `RunsByOwner` index (partition `owner`,
sort key `run_order` = `<created_at>#<run_id>`, on META items only), newest first; a session's runs from
the owner's own partition of the session (`keys.session_pk`), whose sort keys are ordered the same way,
then their METAs in one batch.
Either way the position in the listing is a `run_order`, so one cursor format serves both.
"""

from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel

from stepwise.errors import RunNotFound
from stepwise.models.run import OPEN_STATUSES, RunMeta, RunSummary, RunUsage
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.items import to_meta
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed

# How many index entries one listing request may read, per run it returns, before it answers with what
# it found and a cursor: a filter that matches few runs never reads an owner's whole history at once.
EXAMINED_PER_RESULT = 5
_BATCH_GET_LIMIT = 100


# Built on first use: only a listing of runs (GET /v1/runs) makes pages.
class RunPage(BaseModel, defer_build=True):
    """One page of a listing; `next_after` is the `run_order` to continue below, None at the end."""

    runs: list[RunSummary]
    next_after: str | None = None


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

    def _pages(self, **query: Any) -> Iterator[list[dict[str, Any]]]:
        """Pages of a Query, each as decoded items, following LastEvaluatedKey."""
        start: dict[str, Any] | None = None
        while True:
            response = self._db.call(
                "query", TableName=self._db.name, **query, **({"ExclusiveStartKey": start} if start else {})
            )
            yield [deserialize_item(item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start:
                return

    def _owner_entries(self, owner: str, before: str | None, page_size: int) -> Iterator[dict[str, Any]]:
        condition = "#owner = :owner" + (" AND #order < :before" if before else "")
        values = {":owner": serialize_value(owner)} | ({":before": serialize_value(before)} if before else {})
        for page in self._pages(
            IndexName=keys.OWNER_INDEX,
            KeyConditionExpression=condition,
            ExpressionAttributeNames={"#owner": "owner"} | ({"#order": "run_order"} if before else {}),
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            Limit=page_size,
        ):
            yield from page

    def _session_entries(
        self, owner: str, session_id: str, before: str | None, page_size: int
    ) -> Iterator[dict[str, Any]]:
        pk = serialize_value(keys.session_pk(owner, session_id))
        if before:
            condition, bound = "pk = :pk AND sk < :bound", keys.SESSION_RUN_PREFIX + before
        else:
            condition, bound = "pk = :pk AND begins_with(sk, :bound)", keys.SESSION_RUN_PREFIX
        for page in self._pages(
            KeyConditionExpression=condition,
            ExpressionAttributeValues={":pk": pk, ":bound": serialize_value(bound)},
            ScanIndexForward=False,
            Limit=page_size,
            ConsistentRead=True,
        ):
            metas = self._metas([str(entry["run_id"]) for entry in page])
            yield from (metas[str(entry["run_id"])] for entry in page if str(entry["run_id"]) in metas)

    def _metas(self, run_ids: list[str], projection: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
        """The META items of `run_ids` (those that exist; only `projection`'s attributes when given), read in
        batches."""
        found: dict[str, dict[str, Any]] = {}
        read: dict[str, Any] = {"ConsistentRead": True}
        if projection:
            names = {f"#a{index}": name for index, name in enumerate(projection)}
            read |= {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
        for start in range(0, len(run_ids), _BATCH_GET_LIMIT):
            wanted = [
                serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK})
                for run_id in run_ids[start : start + _BATCH_GET_LIMIT]
            ]
            request: dict[str, Any] = {self._db.name: {"Keys": wanted, **read}}
            while request:
                response = self._db.call("batch_get_item", RequestItems=request)
                for item in response.get("Responses", {}).get(self._db.name, []):
                    decoded = deserialize_item(item)
                    found[str(decoded["run_id"])] = decoded
                request = response.get("UnprocessedKeys") or {}
        return found

    def list_runs(
        self,
        owner: str,
        *,
        limit: int,
        session_id: str | None = None,
        before: str | None = None,
        accept: Callable[[RunSummary], bool] = lambda _summary: True,
    ) -> RunPage:
        """Up to `limit` of `owner`'s runs that `accept` keeps, newest first, below the `before` position.

        At most `limit * EXAMINED_PER_RESULT` entries are read: a page may then hold fewer runs than
        `limit` and still have a `next_after`.
        """
        page_size = limit + 1
        entries = (
            self._session_entries(owner, session_id, before, page_size)
            if session_id
            else self._owner_entries(owner, before, page_size)
        )
        budget = limit * EXAMINED_PER_RESULT
        runs: list[RunSummary] = []
        last_examined: str | None = None
        for entry in entries:
            summary = RunSummary.model_validate(entry)
            if len(runs) == limit:
                # one more match exists: continue below the last run returned
                return RunPage(
                    runs=self._with_metadata(runs, session_id),
                    next_after=keys.run_order(runs[-1].created_at, runs[-1].run_id),
                )
            last_examined = keys.run_order(summary.created_at, summary.run_id)
            if accept(summary):
                runs.append(summary)
            budget -= 1
            if budget == 0 and len(runs) < limit:
                return RunPage(runs=self._with_metadata(runs, session_id), next_after=last_examined)
        return RunPage(runs=self._with_metadata(runs, session_id))

    def _with_metadata(self, runs: list[RunSummary], session_id: str | None) -> list[RunSummary]:
        """The runs with the metadata and outcome stored on their META, which the owner index does not
        project (a projection cannot change on a deployed index): one BatchGetItem for the page. A
        session's listing read the whole META items already."""
        wanted = [summary.run_id for summary in runs]
        if session_id is not None or not wanted:
            return runs
        metas = self._metas(wanted, projection=("run_id", "metadata", "outcome"))
        return [
            summary.model_copy(
                update={
                    "metadata": metas[summary.run_id].get("metadata") or {},
                    "outcome": metas[summary.run_id].get("outcome"),
                }
            )
            if summary.run_id in metas
            else summary
            for summary in runs
        ]

    def answers(self, run_ids: list[str]) -> dict[str, str | None]:
        """The stored answer of each of `run_ids` that exists (None for a run without one), read in
        batches: what a listing reads of a run stored before outcomes were recorded, to tell its outcome."""
        metas = self._metas(run_ids, projection=("run_id", "answer"))
        return {run_id: None if item.get("answer") is None else str(item["answer"]) for run_id, item in metas.items()}

    def cancel_run(self, run_id: str, *, by: str, usage: RunUsage) -> RunMeta:
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
        }
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
