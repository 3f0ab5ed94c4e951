"""Fixtures shared by every test layer: AWS credentials that can never reach AWS, and a moto table."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from stepwise.local.ast_guard import serialise_ast_parsing

if TYPE_CHECKING:
    from stepwise.local.dynamodb_local import DynamoDBLocal

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# Set before boto3 is imported anywhere, so no test can sign a request with real credentials.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)
# The CLI's embedded DynamoDB Local keeps its data in a folder of this test process, not in the project's,
# and stops as soon as the command that used it ends (a test that shares it across commands says so).
os.environ["STEPWISE_DATA_DIR"] = tempfile.mkdtemp(prefix="stepwise-data-")
os.environ["STEPWISE_STORE_IDLE_TIMEOUT"] = "0"
atexit.register(shutil.rmtree, os.environ["STEPWISE_DATA_DIR"], ignore_errors=True)
for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "DYNAMODB_ENDPOINT_URL"):
    os.environ.pop(name, None)
# Hypothesis parses its strategies' lambdas on the test's thread while in-process servers parse on theirs
serialise_ast_parsing()
# A test worker holds every test module, its parameters and the libraries they import (hypothesis, moto,
# schemathesis, botocore's models, real OpenAPI documents): with the default threshold (700 allocations), the
# cyclic collector ran thousands of times over that heap, a third of the CPU of in-process tests. Fewer young
# collections here, and what collection leaves alive frozen (below): tests/unit/steps took 24 s of CPU against
# 38 s (GC 4.5 s against 13 s), measured 2026-11-28.
gc.set_threshold(10_000, 10, 10)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection left alive (modules, test items, their parameters) lives until the worker ends: frozen,
    the collector never walks it again."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def no_store_left_running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """When the session ends, every shared DynamoDB Local its commands left (in $STEPWISE_DATA_DIR or a
    test's own folder) is stopped, so no Java process outlives the tests."""
    yield
    from stepwise.local.shared_store import stop

    records = tmp_path_factory.getbasetemp().rglob("engine.json")
    for folder in {Path(os.environ["STEPWISE_DATA_DIR"]), *(record.parent for record in records)}:
        stop(folder)


@pytest.fixture
def dynamodb_table() -> Iterator[tuple[Any, str]]:
    """A moto DynamoDB client and a conversation table created from template.yaml's key schema."""
    import boto3
    from moto import mock_aws

    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), "conversations")
        yield client, "conversations"


@pytest.fixture(scope="session")
def dynamodb_local_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DynamoDBLocal]:
    """AWS's DynamoDB Local on disk, started once per test session (per xdist worker)."""
    from stepwise.local.dynamodb_local import DynamoDBLocal

    with DynamoDBLocal(tmp_path_factory.mktemp("dynamodb-local")) as engine:
        yield engine


@pytest.fixture(scope="session")
def dynamodb_local(dynamodb_local_engine: DynamoDBLocal) -> str:
    """The endpoint URL of the session's DynamoDB Local."""
    return dynamodb_local_engine.endpoint_url


@pytest.fixture
def unique_table_name() -> str:
    """A table name of this test's own, for tests sharing the session's DynamoDB Local."""
    import uuid

    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def dynamodb_local_table(dynamodb_local: str, unique_table_name: str) -> tuple[Any, str]:
    """A client of the session's DynamoDB Local and a conversation table of this test's own, created from
    template.yaml: for what moto does not check as the real engine does (item sizes, expressions)."""
    import boto3

    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate

    client = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb_local,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), unique_table_name)
    return client, unique_table_name
