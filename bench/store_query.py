"""Query time of a run's partition as the table grows: the in-memory moto server against DynamoDB Local.

A run reads its conversation with one Query on its own partition; the other items of the table (other
runs) should not make it slower. Figures are the median of 20 Queries of a 5-item partition.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stepwise.config.settings import Settings
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB, create_table_from_template
from stepwise.local.template import SamTemplate
from stepwise.steps.runtime import dynamodb_client

TABLE = "bench-query"
SIZES = (0, 1_000, 10_000)
QUERIES = 20
BATCH = 25


@contextmanager
def store_endpoint(store: str) -> Iterator[str]:
    """The endpoint of `store`: "moto" (in memory) or "dynamodb-local" (on a temporary folder)."""
    if store == "moto":
        with EmbeddedDynamoDB() as moto:
            yield moto.endpoint_url
        return
    with tempfile.TemporaryDirectory() as data_dir, DynamoDBLocal(Path(data_dir)) as engine:
        yield engine.endpoint_url


def _fill(client: Any, start: int, stop: int) -> None:
    for first in range(start, stop, BATCH):
        requests = [
            {"PutRequest": {"Item": {"pk": {"S": f"RUN#{index}"}, "sk": {"S": "META"}, "data": {"S": "x" * 200}}}}
            for index in range(first, min(first + BATCH, stop))
        ]
        pending: dict[str, Any] = {TABLE: requests}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _query_ms(client: Any) -> float:
    timings = []
    for _ in range(QUERIES):
        started = time.perf_counter()
        client.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "RUN#measured"}},
            ConsistentRead=True,
        )
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def store_client(endpoint_url: str) -> Any:
    """The local store's own DynamoDB client on `endpoint_url` (placeholder keys and a fixed Region, as every
    local command's), so the benchmark needs no AWS credentials."""
    return dynamodb_client(Settings(table_name=TABLE, dynamodb_endpoint_url=endpoint_url, local_endpoints=True))


def measure(store: str) -> list[float]:
    """Median Query milliseconds of `store` at each of SIZES unrelated items."""
    with store_endpoint(store) as endpoint_url:
        client = store_client(endpoint_url)
        create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), TABLE)
        for slot in range(5):
            client.put_item(TableName=TABLE, Item={"pk": {"S": "RUN#measured"}, "sk": {"S": f"MSG#{slot}"}})
        figures, filled = [], 0
        for size in SIZES:
            _fill(client, filled, size)
            filled = size
            figures.append(_query_ms(client))
        return figures


def main() -> None:
    """Print the Query table for both stores."""
    print("Query of one run's partition (5 items) as the table grows, median of 20, ms")
    print("| store | " + " | ".join(f"{size:,} items" for size in SIZES) + " |")
    print("| --- |" + " ---: |" * len(SIZES))
    for store in ("moto", "dynamodb-local"):
        print(f"| {store} | " + " | ".join(f"{value:.1f}" for value in measure(store)) + " |", flush=True)
