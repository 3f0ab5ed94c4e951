"""The DynamoDB client of the steps, shared locally by every execution thread of the engine, and the one the
benchmark's store queries use."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.store_query import store_client
from stepwise.config.settings import Settings
from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB
from stepwise.local.stepfunctions_endpoint import DEFAULT_MAX_CONCURRENT_EXECUTIONS
from stepwise.steps.runtime import dynamodb_client

BENCH_EXECUTION_SLOTS = 32  # the execution slots `make bench` gives the local engine
BOTOCORE_DEFAULT_POOL = 10


def test_the_client_keeps_a_connection_for_every_execution_slot() -> None:
    # Given the steps' DynamoDB client (locally, one handler instance serves every execution thread)
    client = dynamodb_client(Settings(table_name="runs", dynamodb_endpoint_url="http://127.0.0.1:8000"))

    # When its connection pool is read
    pool = client.meta.config.max_pool_connections

    # Then it holds more than botocore's default of 10, and at least one connection per execution slot of
    # `stepwise serve` and of the benchmark, so no concurrent request opens a connection only to drop it
    assert pool > BOTOCORE_DEFAULT_POOL
    assert pool >= max(BENCH_EXECUTION_SLOTS, DEFAULT_MAX_CONCURRENT_EXECUTIONS)


def test_the_benchmarks_store_client_needs_no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given no AWS credentials anywhere: no keys, no profile, empty credential and configuration files
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty"
    empty.write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # When `make bench`'s store-query client asks the embedded store for its tables
    with EmbeddedDynamoDB() as store:
        answer = store_client(store.endpoint_url).list_tables()
    # Then it is answered, signed as every local command's store client is (placeholder keys)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
