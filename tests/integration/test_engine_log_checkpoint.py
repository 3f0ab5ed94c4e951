"""DynamoDB Local's write-ahead log, which the engine never empties itself, is emptied by the supervisor's
checkpoint once it has grown past its limit, without losing a write (against the real engine, on disk)."""

from __future__ import annotations

from typing import Any

from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.engine_process import DATABASE_FILE, checkpoint_write_ahead_log

ITEMS = 200


def _fill(client: Any, table: str) -> None:
    for index in range(ITEMS):
        item = {"pk": {"S": f"RUN#{index}"}, "sk": {"S": "META"}, "body": {"S": "x" * 2000}}
        client.put_item(TableName=table, Item=item)


def _stored(client: Any, table: str) -> int:
    keys = [{"pk": {"S": f"RUN#{index}"}, "sk": {"S": "META"}} for index in range(ITEMS)]
    found = 0
    for start in range(0, ITEMS, 100):
        answer = client.batch_get_item(RequestItems={table: {"Keys": keys[start : start + 100]}})
        found += len(answer["Responses"][table])
    return found


def test_a_log_past_its_limit_is_emptied_and_every_write_still_reads_back(
    dynamodb_local_engine: DynamoDBLocal, dynamodb_local_table: tuple[Any, str]
) -> None:
    # Given an engine whose log holds a few hundred writes (a few MB: the engine never checkpoints it)
    client, table = dynamodb_local_table
    _fill(client, table)
    log = dynamodb_local_engine.data_dir / f"{DATABASE_FILE}-wal"
    assert log.stat().st_size > 1_000_000

    # When the checkpoint runs with a limit below that size
    emptied = checkpoint_write_ahead_log(dynamodb_local_engine.data_dir / DATABASE_FILE, above_bytes=1_000_000)

    # Then the log is empty, every item reads back, and the engine goes on taking writes
    assert emptied
    assert log.stat().st_size == 0
    assert _stored(client, table) == ITEMS
    client.put_item(TableName=table, Item={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})
    assert "Item" in client.get_item(TableName=table, Key={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})


def test_a_log_under_its_limit_is_left_as_it_is(
    dynamodb_local_engine: DynamoDBLocal, dynamodb_local_table: tuple[Any, str]
) -> None:
    # Given an engine whose log holds a write
    client, table = dynamodb_local_table
    client.put_item(TableName=table, Item={"pk": {"S": "RUN#1"}, "sk": {"S": "META"}})
    log = dynamodb_local_engine.data_dir / f"{DATABASE_FILE}-wal"
    size = log.stat().st_size

    # When the checkpoint runs with the default limit (64 MB)
    emptied = checkpoint_write_ahead_log(dynamodb_local_engine.data_dir / DATABASE_FILE)

    # Then nothing is done
    assert not emptied
    assert log.stat().st_size == size
