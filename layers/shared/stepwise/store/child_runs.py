"""Child runs: the link a parent keeps to each run its agent calls started, and the parent's wait on a child.

A parent's `CHILD#<iteration:04d>#<index:02d>` item (under the parent's partition) is put when the child is
started, before the child itself, so `GET /v1/runs/{id}` lists a parent's children with one Query of its own
partition and one BatchGetItem of their META (their status), never a scan. The parent's wait is a task token
set on the child's META: the write returns the child as it then is, so a child that ended first is seen at
once, and a child that ends after finds the token in the META its end write returns (no race between the two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from stepwise.errors import RunNotFound
from stepwise.models.delegation import ChildRunLink
from stepwise.models.step_record import StepRecord
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.items import to_meta
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed
from stepwise.store.views import RunRef

CHILD_PREFIX = "CHILD#"
# a GET lists at most this many children (a run has at most max_iterations x max_parallel_calls calls)
MAX_LISTED_CHILDREN = 100
_BATCH_GET_LIMIT = 100


def child_sk(iteration: int, index: int) -> str:
    """Sort key of the link to the child started by call `index` of `iteration`, under the parent's partition."""
    return f"{CHILD_PREFIX}{iteration:04d}#{index:02d}"


class ChildRunStore:
    """Links from parents to their child runs, and the parent's wait on a child."""

    def __init__(self, db: Table, *, now_iso: Callable[[], str]) -> None:
        self._db = db
        self._now_iso = now_iso

    def link(
        self, parent: RunRef, iteration: int, index: int, *, child_run_id: str, profile: str, call_id: str
    ) -> None:
        """Record that call `index` of `iteration` started `child_run_id` (once: a retry finds it there)."""
        self._db.put_if_absent(
            {
                "pk": keys.run_pk(parent.run_id),
                "sk": child_sk(iteration, index),
                "child_run_id": child_run_id,
                "profile": profile,
                "call_id": call_id,
                "iteration": iteration,
                "created_at": self._now_iso(),
                "expires_at": parent.expires_at,
            }
        )

    def children(self, parent_run_id: str, *, limit: int = MAX_LISTED_CHILDREN) -> list[ChildRunLink]:
        """The children of a run, in call order, with their status: one Query of the parent's links (at most
        `limit`) and one BatchGetItem of their META; a link whose child was never stored is left out."""
        links = []
        for item in self._db.query(keys.run_pk(parent_run_id), CHILD_PREFIX):
            links.append(item)
            if len(links) >= limit:
                break
        if not links:
            return []
        statuses = self._statuses([str(link["child_run_id"]) for link in links])
        return [
            ChildRunLink(
                run_id=str(link["child_run_id"]),
                profile=str(link["profile"]),
                call_id=str(link["call_id"]),
                iteration=int(link["iteration"]),
                status=statuses[str(link["child_run_id"])],
            )
            for link in links
            if str(link["child_run_id"]) in statuses
        ]

    def _statuses(self, run_ids: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        names = {"#a0": "run_id", "#a1": "status"}
        for start in range(0, len(run_ids), _BATCH_GET_LIMIT):
            wanted = [
                serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK})
                for run_id in run_ids[start : start + _BATCH_GET_LIMIT]
            ]
            request: dict[str, Any] = {
                self._db.name: {
                    "Keys": wanted,
                    "ConsistentRead": True,
                    "ProjectionExpression": "#a0, #a1",
                    "ExpressionAttributeNames": names,
                }
            }
            while request:
                response = self._db.call("batch_get_item", RequestItems=request)
                for item in response.get("Responses", {}).get(self._db.name, []):
                    decoded = deserialize_item(item)
                    found[str(decoded["run_id"])] = str(decoded["status"])
                request = response.get("UnprocessedKeys") or {}
        return found

    def await_child(self, child_run_id: str, token: str) -> Any:
        """Set the parent's wait (`token`) on the child's META; returns the child's META as it now is (one
        UpdateItem). A retried or resumed wait replaces the token. `RunNotFound` when there is no child."""
        try:
            response = self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=serialize_item({"pk": keys.run_pk(child_run_id), "sk": keys.META_SK}),
                UpdateExpression="SET #token = :token",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#token": "parent_task_token"},
                ExpressionAttributeValues={":token": serialize_value(token)},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if condition_failed(exc):
                raise RunNotFound(f"run {child_run_id} not found") from None
            raise
        return to_meta(deserialize_item(response["Attributes"]))

    def call_steps(self, run_id: str, iteration: int, indexes: list[int]) -> list[StepRecord]:
        """The trace steps of calls `indexes` of `iteration` that are stored (one BatchGetItem of their
        observations, the `trace` attribute only)."""
        if not indexes:
            return []
        request: dict[str, Any] = {
            self._db.name: {
                "Keys": [
                    serialize_item(
                        {"pk": keys.run_pk(run_id), "sk": keys.message_sk(iteration, keys.observation_slot(index))}
                    )
                    for index in indexes
                ],
                "ConsistentRead": True,
                "ProjectionExpression": "#trace",
                "ExpressionAttributeNames": {"#trace": "trace"},
            }
        }
        steps: list[StepRecord] = []
        while request:
            response = self._db.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self._db.name, []):
                decoded = deserialize_item(item)
                if "trace" in decoded:
                    steps.append(StepRecord.model_validate_json(decoded["trace"]))
            request = response.get("UnprocessedKeys") or {}
        return steps
