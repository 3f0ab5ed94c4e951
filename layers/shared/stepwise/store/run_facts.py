"""What the overview reads of an owner's runs: a bounded Query of the `RunsByOwner` index by creation time,
then the usage the index does not project.

The index's partition is the owner and its sort key `run_order` (`<created_at>#<run_id>`), so "the runs
created since T" is one key condition, `run_order >= T`, read newest first and cut at `limit`: the read
never scans, and its size is bounded by the caller's window and the cap, not by the owner's history.
The index projects no usage, so the usage of the runs read comes from their META items in BatchGetItem
calls of 100 (eventually consistent: an overview may lag a run's end by a second); once the index projects
`usage`, the entries carry it and no META is read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from stepwise.models.run import RunStatus, RunUsage
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.table import Table

_BATCH_GET_LIMIT = 100
# Index entries asked for per Query page: a page of the index is at most 1 MB whatever this says.
_PAGE_SIZE = 500


# Built on first use: only GET /v1/overview reads these.
class RunFact(BaseModel, defer_build=True):
    """One run as the overview counts it: where it ran, how it ended, when, and what it spent."""

    run_id: str
    status: RunStatus
    profile: str
    deadline: float
    created_at: str
    updated_at: str
    usage: RunUsage = Field(default_factory=RunUsage)


class RunFacts(BaseModel, defer_build=True):
    """The runs created since a time, newest first; `truncated` when more were there than the cap allowed."""

    runs: list[RunFact]
    truncated: bool = False


class RunFactsReader:
    """Reads an owner's recent runs for the overview, on the conversation table."""

    def __init__(self, table: Table) -> None:
        self._db = table

    def created_since(self, owner: str, since: str, *, limit: int) -> RunFacts:
        """`owner`'s runs created at or after the ISO time `since`, newest first, at most `limit` of them.

        One Query of the owner index (pages of up to 500 entries, ~0.5 RCU per 4 KB read) and one
        BatchGetItem per 100 runs for their usage (0.5 RCU per META item of up to 4 KB).
        """
        facts: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while len(facts) <= limit:
            response = self._db.call(
                "query",
                TableName=self._db.name,
                IndexName=keys.OWNER_INDEX,
                KeyConditionExpression="#owner = :owner AND #order >= :since",
                ExpressionAttributeNames={"#owner": "owner", "#order": "run_order"},
                ExpressionAttributeValues={":owner": serialize_value(owner), ":since": serialize_value(since)},
                ScanIndexForward=False,
                Limit=min(_PAGE_SIZE, limit + 1 - len(facts)),
                **({"ExclusiveStartKey": start} if start else {}),
            )
            facts.extend(deserialize_item(item) for item in response.get("Items", []))
            start = response.get("LastEvaluatedKey")
            if not start:
                break
        truncated = len(facts) > limit
        kept = facts[:limit]
        # an index that projects `usage` gives it in the entry: only the entries without it are read again
        usage = self._with_usage([str(entry["run_id"]) for entry in kept if "usage" not in entry])
        return RunFacts(
            runs=[RunFact.model_validate({"usage": usage.get(str(entry["run_id"])) or {}} | entry) for entry in kept],
            truncated=truncated,
        )

    def _with_usage(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored usage of each of `run_ids` that has one, read from their META in batches."""
        found: dict[str, dict[str, Any]] = {}
        for first in range(0, len(run_ids), _BATCH_GET_LIMIT):
            wanted = [
                serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK})
                for run_id in run_ids[first : first + _BATCH_GET_LIMIT]
            ]
            request: dict[str, Any] = {
                self._db.name: {
                    "Keys": wanted,
                    "ProjectionExpression": "#id, #usage",
                    "ExpressionAttributeNames": {"#id": "run_id", "#usage": "usage"},
                }
            }
            while request:
                response = self._db.call("batch_get_item", RequestItems=request)
                for item in response.get("Responses", {}).get(self._db.name, []):
                    decoded = deserialize_item(item)
                    if isinstance(decoded.get("usage"), dict):
                        found[str(decoded["run_id"])] = decoded["usage"]
                request = response.get("UnprocessedKeys") or {}
        return found
