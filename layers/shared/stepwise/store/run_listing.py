"""A page of an owner's runs under a `RunFilter`, read without a Scan (docs/architecture.md, "Listing runs").

Entries come in chunks, newest first: from the owner index (one Query each, filtered by DynamoDB on what
it projects, within the key range of the creation times) or from the owner's partition of a session (with
their META items). A page follows the chunks until it holds `limit` runs and one more is known to match
(so a next link always leads to a run), the range ends, or the request's read budget is spent:
`MAX_EXAMINED` index entries and `MAX_META_READS` META items read to match what only META holds. A page
cut by the budget continues below the last entry examined; a budget spent before anything matched ends
the listing there instead (no page is ever empty with a next link) and says where the search stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from stepwise.models.run import RunSummary
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.run_filters import LISTED_ATTRIBUTES, META_FILTER_ATTRIBUTES, RunFilter
from stepwise.store.table import Table

MAX_EXAMINED = 2000
"""Index (or session) entries one listing request may read: ~0.5 MB of the index at most."""
MAX_META_READS = 400
"""META items one listing request may read to match metadata, tools or text (4 BatchGetItem requests)."""
# Entries read per Query when DynamoDB filters them (a large read: few of them may match); when META must
# be read for each, a Query reads `MAX_META_READS` entries, whose METAs are read 100 at a time as needed.
_INDEX_FILTER_CHUNK = 500
_BATCH_GET_LIMIT = 100


# Built on first use: only a listing of runs (GET /v1/runs) makes pages.
class RunPage(BaseModel, defer_build=True):
    """One page of a listing; `next_after` is the `run_order` to continue below, None at the end.

    `stopped_at` is set when the read budget was spent before any run matched: the `run_order` of the
    last entry examined, where a narrower search (`created_before`) may go on.
    """

    runs: list[RunSummary]
    next_after: str | None = None
    stopped_at: str | None = None


@dataclass(frozen=True)
class _Chunk:
    entries: list[dict[str, Any]]
    # the `run_order` of the last entry examined, None when the range has no more
    position: str | None
    examined: int
    meta_reads: int


def read_metas(db: Table, run_ids: list[str], projection: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """The META items of `run_ids` that exist (only `projection`'s attributes when given), in batches."""
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
        request: dict[str, Any] = {db.name: {"Keys": wanted, **read}}
        while request:
            response = db.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(db.name, []):
                decoded = deserialize_item(item)
                found[str(decoded["run_id"])] = decoded
            request = response.get("UnprocessedKeys") or {}
    return found


class RunLister:
    """Reads one page of an owner's runs (see the module)."""

    def __init__(
        self,
        db: Table,
        owner: str,
        filters: RunFilter,
        *,
        session_id: str | None = None,
        max_examined: int = MAX_EXAMINED,
        max_meta_reads: int = MAX_META_READS,
    ) -> None:
        self._db = db
        self._owner = owner
        self._filters = filters
        self._session_id = session_id
        self._max_examined = max_examined
        self._max_meta_reads = max_meta_reads

    def page(self, *, limit: int, before: str | None, accept: Callable[[RunSummary], bool]) -> RunPage:
        """Up to `limit` matching runs below `before`, newest first (see the module for when it stops)."""
        bounds = self._filters.order_range(before)
        if bounds is None:
            return RunPage(runs=[])
        chunks = self._session_chunks(bounds, limit) if self._session_id else self._index_chunks(bounds, limit)
        runs: list[RunSummary] = []
        examined = meta_reads = 0
        for chunk in chunks:
            examined += chunk.examined
            meta_reads += chunk.meta_reads
            for entry in chunk.entries:
                summary = RunSummary.model_validate(entry)
                if keys.run_order(summary.created_at, summary.run_id) == before or not accept(summary):
                    continue
                if len(runs) == limit:
                    # one more match exists: continue below the last run returned
                    last = runs[-1]
                    return RunPage(runs=self._shown(runs), next_after=keys.run_order(last.created_at, last.run_id))
                runs.append(summary)
            if chunk.position is None:
                return RunPage(runs=self._shown(runs))
            if examined >= self._max_examined or meta_reads >= self._max_meta_reads:
                if not runs:
                    return RunPage(runs=[], stopped_at=chunk.position)
                return RunPage(runs=self._shown(runs), next_after=chunk.position)
        return RunPage(runs=self._shown(runs))

    def _chunk_size(self, limit: int) -> int:
        if self._session_id:
            return _BATCH_GET_LIMIT
        if self._filters.reads_meta:
            return min(self._max_meta_reads, self._max_examined)
        if self._filters.index_expression():
            return min(_INDEX_FILTER_CHUNK, self._max_examined)
        return limit + 1

    def _index_chunks(self, bounds: tuple[str | None, str], limit: int) -> Iterator[_Chunk]:
        query: dict[str, Any] = {
            "TableName": self._db.name,
            "IndexName": keys.OWNER_INDEX,
            "KeyConditionExpression": f"#owner = :owner AND {_range_condition('#order', bounds)}",
            "ExpressionAttributeNames": {"#owner": "owner", "#order": "run_order"},
            "ExpressionAttributeValues": {":owner": serialize_value(self._owner)} | _range_values(bounds, ""),
            "ScanIndexForward": False,
            "Limit": self._chunk_size(limit),
        }
        expression = self._filters.index_expression()
        if expression is not None:
            condition, names, values = expression
            query["FilterExpression"] = condition
            query["ExpressionAttributeNames"] |= names
            query["ExpressionAttributeValues"] |= values
        start: dict[str, Any] | None = None
        while True:
            response = self._db.call("query", **query, **({"ExclusiveStartKey": start} if start else {}))
            entries = [deserialize_item(item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            position = str(deserialize_item(start)["run_order"]) if start else None
            examined = int(response.get("ScannedCount", len(entries)))
            if self._filters.reads_meta and entries:
                yield from self._meta_groups(entries, position, examined)
            else:
                yield _Chunk(entries, position, examined, 0)
            if not start:
                return

    def _meta_groups(self, entries: list[dict[str, Any]], position: str | None, examined: int) -> Iterator[_Chunk]:
        """The entries of one Query whose META matches, a batch at a time as the page takes them: a page
        that fills early reads no more META."""
        for first in range(0, len(entries), _BATCH_GET_LIMIT):
            group = entries[first : first + _BATCH_GET_LIMIT]
            matched, reads = self._matching_metas(group)
            last_group = first + _BATCH_GET_LIMIT >= len(entries)
            yield _Chunk(
                matched,
                position if last_group else str(group[-1]["run_order"]),
                examined if first == 0 else 0,
                reads,
            )

    def _session_chunks(self, bounds: tuple[str | None, str], limit: int) -> Iterator[_Chunk]:
        assert self._session_id is not None
        query: dict[str, Any] = {
            "TableName": self._db.name,
            "KeyConditionExpression": f"pk = :pk AND {_range_condition('sk', bounds)}",
            "ExpressionAttributeValues": {
                ":pk": serialize_value(keys.session_pk(self._owner, self._session_id)),
            }
            | _range_values(bounds, keys.SESSION_RUN_PREFIX),
            "ScanIndexForward": False,
            "Limit": self._chunk_size(limit),
            "ConsistentRead": True,
        }
        start: dict[str, Any] | None = None
        while True:
            response = self._db.call("query", **query, **({"ExclusiveStartKey": start} if start else {}))
            entries = [deserialize_item(item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            metas = read_metas(self._db, [str(entry["run_id"]) for entry in entries])
            matched = [
                metas[run_id]
                for entry in entries
                if (run_id := str(entry["run_id"])) in metas
                and self._filters.matches_entry(metas[run_id])
                and self._filters.matches_meta(metas[run_id])
            ]
            position = str(deserialize_item(start)["sk"]).removeprefix(keys.SESSION_RUN_PREFIX) if start else None
            yield _Chunk(matched, position, len(entries), len(entries))
            if not start:
                return

    def _matching_metas(self, entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """The index entries whose META matches what only META holds, with what the listing shows of it
        added; and how many META items were read for it (none when nothing is matched on META)."""
        if not self._filters.reads_meta or not entries:
            return entries, 0
        metas = read_metas(self._db, [str(entry["run_id"]) for entry in entries], META_FILTER_ATTRIBUTES)
        matched = [
            entry | _listed(metas[run_id])
            for entry in entries
            if (run_id := str(entry["run_id"])) in metas and self._filters.matches_meta(metas[run_id])
        ]
        return matched, len(entries)

    def _shown(self, runs: list[RunSummary]) -> list[RunSummary]:
        """The runs with what the list shows from META (question, usage, metadata, outcome), read in one
        BatchGetItem unless a filter on META or a session's listing read it already."""
        if self._filters.reads_meta or self._session_id is not None or not runs:
            return runs
        metas = read_metas(self._db, [summary.run_id for summary in runs], LISTED_ATTRIBUTES)
        return [
            RunSummary.model_validate(summary.model_dump() | _listed(metas[summary.run_id]))
            if summary.run_id in metas
            else summary
            for summary in runs
        ]


def _range_condition(name: str, bounds: tuple[str | None, str]) -> str:
    """Below the high bound (strictly: it is a cursor's position, or a time no `run_order` equals), and from
    the low bound when there is one (inclusive: BETWEEN; the cursor's own entry is then dropped)."""
    return f"{name} BETWEEN :low AND :high" if bounds[0] is not None else f"{name} < :high"


def _range_values(bounds: tuple[str | None, str], prefix: str) -> dict[str, Any]:
    low, high = bounds
    return {":high": serialize_value(prefix + high)} | ({":low": serialize_value(prefix + low)} if low else {})


def _listed(meta: dict[str, Any]) -> dict[str, Any]:
    return {name: meta[name] for name in LISTED_ATTRIBUTES if name in meta and name != "run_id"}
