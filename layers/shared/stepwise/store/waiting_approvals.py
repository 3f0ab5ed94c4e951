"""An owner's calls waiting for approval across all their runs, oldest first, from the sparse
`WaitingApprovalsByOwner` index (partition `waiting_owner`, sort key `waiting_order` =
`<requested_at>#<run_id>#<iteration>#<index>`): never a Scan, never one read per run.

An `APPROVAL#` item is in the index while it is pending (`store/approvals.py` removes `waiting_owner` in the
update that answers, settles or consumes it, and `withdraw`s the calls of a run cancelled, failed or timed
out while it waited). A call whose run ended in a way nothing recorded while the call waited (lost between
two writes) can still be there, since nothing answered it: each page of index entries is checked against
its runs' META in one BatchGetItem (status and profile only), and a call whose run ended, or whose wait ran
out, is skipped. The index projects what a listing shows and never the task token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from stepwise.models.approval import WaitingCall
from stepwise.models.run import OPEN_STATUSES
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.table import Table

# How many index entries one page may read per call it returns before it answers with what it found and a
# cursor, as listing runs does: entries of runs that ended while a call waited never make a page read them all.
EXAMINED_PER_RESULT = 5
_BATCH_GET_LIMIT = 100


class WaitingPage(BaseModel, defer_build=True):
    """One page of waiting calls; `next_after` is the `waiting_order` to continue after, None at the end."""

    calls: list[WaitingCall]
    next_after: str | None = None


def _entries(table: Table, owner: str, after: str | None, page_size: int) -> Iterator[list[dict[str, Any]]]:
    """The owner's index entries after `after`, oldest first, a Query page at a time."""
    condition = "waiting_owner = :owner" + (" AND waiting_order > :after" if after else "")
    values = {":owner": serialize_value(owner)} | ({":after": serialize_value(after)} if after else {})
    start: dict[str, Any] | None = None
    while True:
        response = table.call(
            "query",
            TableName=table.name,
            IndexName=keys.WAITING_INDEX,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ScanIndexForward=True,
            Limit=page_size,
            **({"ExclusiveStartKey": start} if start else {}),
        )
        yield [deserialize_item(item) for item in response.get("Items", [])]
        start = response.get("LastEvaluatedKey")
        if not start:
            return


def _open_runs(table: Table, run_ids: set[str]) -> dict[str, str]:
    """The profile of each of `run_ids` that is still open (its META's status), in one BatchGetItem per 100."""
    names = {"#run_id": "run_id", "#status": "status", "#profile": "profile"}
    found: dict[str, str] = {}
    wanted = sorted(run_ids)
    for start in range(0, len(wanted), _BATCH_GET_LIMIT):
        request: dict[str, Any] = {
            table.name: {
                "Keys": [
                    serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK})
                    for run_id in wanted[start : start + _BATCH_GET_LIMIT]
                ],
                "ProjectionExpression": ", ".join(names),
                "ExpressionAttributeNames": names,
                "ConsistentRead": True,
            }
        }
        while request:
            response = table.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(table.name, []):
                meta = deserialize_item(item)
                if meta.get("status") in OPEN_STATUSES:
                    found[str(meta["run_id"])] = str(meta["profile"])
            request = response.get("UnprocessedKeys") or {}
    return found


def list_waiting(table: Table, owner: str, *, limit: int, after: str | None, now: float) -> WaitingPage:
    """Up to `limit` of `owner`'s calls still waiting at `now` in open runs, oldest first, after `after`.

    At most `limit * EXAMINED_PER_RESULT` entries are read: a page may then hold fewer calls than `limit`
    and still have a `next_after`.
    """
    budget = limit * EXAMINED_PER_RESULT
    calls: list[WaitingCall] = []
    for page in _entries(table, owner, after, limit + 1):
        if not page:
            continue
        profiles = _open_runs(table, {str(entry["run_id"]) for entry in page})
        for entry in page:
            if len(calls) == limit:
                # one more entry exists: continue after the last call returned
                return WaitingPage(calls=calls, next_after=str(entry_order(calls[-1])))
            run_id = str(entry["run_id"])
            if entry.get("status") == "pending" and float(entry["timeout_at"]) > now and run_id in profiles:
                calls.append(WaitingCall.model_validate(_fields(entry) | {"profile": profiles[run_id]}))
            budget -= 1
            if budget == 0:
                return WaitingPage(calls=calls, next_after=str(entry["waiting_order"]))
    return WaitingPage(calls=calls)


def entry_order(call: WaitingCall) -> str:
    """The `waiting_order` of a listed call: where the next page starts after it."""
    return keys.waiting_order(call.requested_at, call.run_id, call.iteration, call.index)


def _fields(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": entry["run_id"],
        "iteration": int(entry["iteration"]),
        "index": int(entry["index"]),
        "call_id": entry["call_id"],
        "tool": entry["tool"],
        "arguments": json.loads(entry.get("arguments") or "{}"),
        "requested_at": entry["requested_at"],
        "timeout_at": float(entry["timeout_at"]),
    }
