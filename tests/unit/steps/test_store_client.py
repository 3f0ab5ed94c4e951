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


def _authorization_sent(client: object) -> str:
    """The `Authorization` header of the first request `client` sends (ListTables), once it is answered."""
    sent: list[str] = []

    def record(request: object, **_: object) -> None:
        value = request.headers["Authorization"]  # type: ignore[attr-defined]
        sent.append(value.decode() if isinstance(value, bytes) else value)

    client.meta.events.register("before-send.dynamodb", record)  # type: ignore[attr-defined]
    answer = client.list_tables()  # type: ignore[attr-defined]
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    return sent[0]


def test_a_local_store_client_names_the_placeholder_key_and_skips_the_signature() -> None:
    # Given the steps' client of a local store (the placeholder identity, which no service would accept)
    with EmbeddedDynamoDB() as store:
        settings = Settings(table_name="runs", dynamodb_endpoint_url=store.endpoint_url, local_endpoints=True)
        # When it sends a request
        authorization = _authorization_sent(dynamodb_client(settings))
    # Then the request is answered, and names the placeholder key id and Region with no signature computed
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=local/")
    assert "/us-east-1/dynamodb/aws4_request" in authorization
    assert authorization.endswith("Signature=" + "0" * 64)


def test_a_store_client_with_the_callers_credentials_signs_its_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given credentials in the environment, and a client that is not local (as on Lambda)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    with EmbeddedDynamoDB() as store:
        settings = Settings(table_name="runs", dynamodb_endpoint_url=store.endpoint_url, aws_region="eu-west-1")
        # When it sends a request
        authorization = _authorization_sent(dynamodb_client(settings))
    # Then the request carries a SigV4 signature made with those credentials
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert not authorization.endswith("Signature=" + "0" * 64)
