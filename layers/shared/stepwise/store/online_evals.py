"""A run's online eval on its META (`online_eval`), written once: the first result stays.

On META rather than an item of its own, so `GET /v1/runs/{run_id}` (which reads META) shows it with no
request more, and the condition `attribute_not_exists` makes a retried or repeated eval a no-op.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from stepwise.models.online_eval import OnlineEvalResult
from stepwise.store import keys
from stepwise.store.codec import serialize_item, serialize_value
from stepwise.store.table import Table
from stepwise.store.transient import condition_failed


class OnlineEvalStore:
    """META's `online_eval`, on the conversation table."""

    def __init__(self, table: Table) -> None:
        self._db = table

    def record(self, run_id: str, result: OnlineEvalResult) -> bool:
        """Store `result` on the run's META unless one is there already (or the run is gone); True when
        this call stored it."""
        try:
            self._db.call(
                "update_item",
                TableName=self._db.name,
                Key=serialize_item({"pk": keys.run_pk(run_id), "sk": keys.META_SK}),
                UpdateExpression="SET #eval = :eval",
                ConditionExpression="attribute_exists(pk) AND attribute_not_exists(#eval)",
                ExpressionAttributeNames={"#eval": "online_eval"},
                ExpressionAttributeValues={":eval": serialize_value(result.model_dump(exclude_none=True))},
            )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True
