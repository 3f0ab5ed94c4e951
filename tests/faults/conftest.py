"""Fault-suite fixtures: local environments (fast retries) torn down after each test, and the fault table.

The DynamoDB faults are injected in front of AWS's DynamoDB Local; the other scenarios use moto in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stepwise.local.environment import LocalEnvironment
from tests.e2e.conftest import RecordingListener
from tests.faults.dynamodb_proxy import FaultyDynamoDBProxy
from tests.faults.report import register
from tests.support.openai_server import FakeOpenAIServer
from tests.support.tool_server import Json, ScriptableToolServer

EnvironmentStarter = Callable[..., tuple[LocalEnvironment, RecordingListener]]


def pytest_configure(config: pytest.Config) -> None:
    """Print the fault table at the end of the session."""
    register(config)


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """An empty folder for the scenario's stepwise.yaml."""
    return tmp_path


@pytest.fixture
def model_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible model on loopback."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def parcels_api() -> Iterator[ScriptableToolServer]:
    """A tool API on loopback that answers the parcel count."""
    with ScriptableToolServer(default=Json({"depot": "north", "parcels": 17})) as tools:
        yield tools


@pytest.fixture
def proxy(dynamodb_local: str) -> Iterator[FaultyDynamoDBProxy]:
    """The fault proxy in front of the session's DynamoDB Local, AWS's own engine (unarmed: it forwards all)."""
    with FaultyDynamoDBProxy(dynamodb_local) as faulty:
        yield faulty


@pytest.fixture
def start_environment(unique_table_name: str) -> Iterator[EnvironmentStarter]:
    """Start a LocalEnvironment whose retries do not sleep; returns it with a listener of its state events.

    `dynamodb_endpoint_url` puts another endpoint (a fault proxy) in place of the embedded one;
    `extra_environment` is set for the handlers (e.g. the SDK's retry settings).
    """
    started: list[LocalEnvironment] = []

    def start(
        config_dir: Path,
        *,
        dynamodb_endpoint_url: str | None = None,
        extra_environment: dict[str, str] | None = None,
    ) -> tuple[LocalEnvironment, RecordingListener]:
        listener = RecordingListener()
        environment = LocalEnvironment(
            config_dir=config_dir,
            dynamodb_endpoint_url=dynamodb_endpoint_url,
            table_name=unique_table_name,
            retry_interval_scale=0.0,
            listener=listener,
            extra_environment=extra_environment,
        )
        started.append(environment.__enter__())
        return environment, listener

    yield start
    for environment in reversed(started):
        environment.__exit__(None, None, None)
