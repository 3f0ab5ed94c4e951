"""DynamoDB Local's write-ahead log, which the engine never checkpoints itself, is kept from growing by the
supervisor's checkpoint on every tick, and emptied once it has grown past its limit, without losing a write
(against the real engine, on disk)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.engine_process import DATABASE_FILE, checkpoint_write_ahead_log
from stepwise.local.engine_supervisor import Watchdog

ITEMS = 200
# a limit a few dozen writes pass (each PutItem adds several KB of log)
SMALL_LIMIT = 100_000


def _item(run: str) -> dict[str, Any]:
    return {"pk": {"S": f"RUN#{run}"}, "sk": {"S": "META"}, "body": {"S": "x" * 2000}}


def _fill(client: Any, table: str, items: int = ITEMS) -> None:
    for index in range(items):
        client.put_item(TableName=table, Item=_item(str(index)))


def _stored(client: Any, table: str, runs: list[str]) -> int:
    keys = [{"pk": {"S": f"RUN#{run}"}, "sk": {"S": "META"}} for run in runs]
    found = 0
    for start in range(0, len(keys), 100):
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
    assert _stored(client, table, [str(index) for index in range(ITEMS)]) == ITEMS
    client.put_item(TableName=table, Item={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})
    assert "Item" in client.get_item(TableName=table, Key={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})


def test_a_log_checkpointed_after_each_round_of_writes_stops_growing_and_no_write_is_refused(
    dynamodb_local_engine: DynamoDBLocal, dynamodb_local_table: tuple[Any, str]
) -> None:
    # Given a client that never retries, so that a write refused while the log is checkpointed would show
    _, table = dynamodb_local_table
    client = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb_local_engine.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )
    database = dynamodb_local_engine.data_dir / DATABASE_FILE
    log = dynamodb_local_engine.data_dir / f"{DATABASE_FILE}-wal"
    checkpoint_write_ahead_log(database)
    _fill(client, table, 1)
    start = log.stat().st_size

    # When four rounds of 100 writes each are followed by a checkpoint under the default limit (64 MB)
    grown = []
    for round_ in range(4):
        for index in range(100):
            client.put_item(TableName=table, Item=_item(f"{round_}-{index}"))
        grown.append(log.stat().st_size - start)
        emptied = checkpoint_write_ahead_log(database)
        assert not emptied

    # Then the log file stops growing after the first round (the engine starts it over), every write was
    # taken at the first attempt, and every item reads back
    assert grown[0] > 500_000
    assert max(grown[1:]) <= grown[0] * 1.2
    written = [f"{round_}-{index}" for round_ in range(4) for index in range(100)]
    assert _stored(client, table, written) == 400


@pytest.fixture
def watchdog(dynamodb_local_engine: DynamoDBLocal, tmp_path: Path) -> Iterator[Watchdog]:
    """The supervisor's watchdog over the session's engine, with a log limit of `SMALL_LIMIT` and an idle
    timeout it never reaches; the test ticks it (its `run` would end the shared engine when it stops)."""
    assert dynamodb_local_engine.process is not None
    # the engine's own folder lock stays with its owner: the watchdog closes the one it is given only at
    # shutdown, which ticks never reach
    with (tmp_path / "engine.lock").open("w", encoding="utf-8") as engine_lock:
        yield Watchdog(
            dynamodb_local_engine.data_dir,
            dynamodb_local_engine.process,
            engine_lock,
            idle_timeout=3600,
            log_checkpoint_bytes=SMALL_LIMIT,
        )


def test_the_supervisors_watchdog_empties_a_log_past_its_limit_while_the_engine_serves(
    dynamodb_local_engine: DynamoDBLocal, dynamodb_local_table: tuple[Any, str], watchdog: Watchdog
) -> None:
    # Given an engine whose log has grown past the watchdog's limit
    client, table = dynamodb_local_table
    _fill(client, table, 40)
    log = dynamodb_local_engine.data_dir / f"{DATABASE_FILE}-wal"
    assert log.stat().st_size > SMALL_LIMIT

    # When the watchdog ticks
    serving = watchdog.tick()

    # Then it keeps the engine, the log is empty, every item reads back, and the engine takes a write
    assert serving
    assert log.stat().st_size == 0
    assert _stored(client, table, [str(index) for index in range(40)]) == 40
    client.put_item(TableName=table, Item={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})
    assert "Item" in client.get_item(TableName=table, Key={"pk": {"S": "RUN#after"}, "sk": {"S": "META"}})


def test_the_log_emptied_during_a_burst_of_writes_loses_none_of_them(
    dynamodb_local_engine: DynamoDBLocal, dynamodb_local_table: tuple[Any, str]
) -> None:
    """The engine sets SQLite no busy timeout: a write that meets the truncation is answered InternalFailure
    (500) at once, about one per truncation (without retries: 41 of 240 writes from 4 threads, checkpointing
    every 20 ms). botocore's default retries, which the store's client keeps, send it again."""
    # Given four writers of 30 items each, on a client retrying as the store's does (botocore's defaults)
    client, table = dynamodb_local_table
    statuses: list[int] = []

    def write(thread: int) -> None:
        for index in range(30):
            try:
                answer = client.put_item(TableName=table, Item=_item(f"{thread}-{index}"))
            except ClientError as error:
                answer = error.response
            statuses.append(answer["ResponseMetadata"]["HTTPStatusCode"])

    threads = [threading.Thread(target=write, args=(thread,)) for thread in range(4)]

    # When the truncating checkpoint runs, with a small limit, for as long as they write
    for thread in threads:
        thread.start()
    database = dynamodb_local_engine.data_dir / DATABASE_FILE
    emptied = 0
    while any(thread.is_alive() for thread in threads):
        emptied += checkpoint_write_ahead_log(database, above_bytes=SMALL_LIMIT)
        time.sleep(0.02)
    for thread in threads:
        thread.join()

    # Then every write was answered 200, every item reads back, and the log was emptied at least once
    assert statuses == [200] * 120
    assert _stored(client, table, [f"{thread}-{index}" for thread in range(4) for index in range(30)]) == 120
    assert emptied >= 1
