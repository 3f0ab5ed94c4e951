"""The runs still open (QUEUED or RUNNING) in a table: what the local engine resumes when it starts.

This is the one Scan of the project, and only the local engine calls it, once at start-up, on the
developer's own table: on AWS an execution outlives any process, so nothing needs to find open runs.
An index would cost every write of META on AWS for a read that happens only locally.
"""

from __future__ import annotations

from typing import Any

from stepwise.models.run import OPEN_STATUSES, RunMeta
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_value
from stepwise.store.items import to_meta


def find_open_runs(client: Any, table_name: str) -> list[RunMeta]:
    """Every run of the table whose status is QUEUED or RUNNING, oldest first."""
    statuses = {f":open{index}": serialize_value(status) for index, status in enumerate(OPEN_STATUSES)}
    paginator = client.get_paginator("scan")
    pages = paginator.paginate(
        TableName=table_name,
        FilterExpression=f"sk = :meta AND #status IN ({', '.join(statuses)})",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":meta": serialize_value(keys.META_SK)} | statuses,
        ConsistentRead=True,
    )
    runs = [to_meta(deserialize_item(item)) for page in pages for item in page.get("Items", [])]
    return sorted(runs, key=lambda meta: meta.created_at)
