"""Integration fixtures: the demo configuration in a local environment (handlers from template.yaml over moto)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.lambda_runtime import unload_handlers
from stepwise.models.messages import ChatMessage
from stepwise.steps.runs import create_run, execution_input
from tests.conftest import PROJECT_ROOT

RUN_ID = "0123456789abcdef0123456789abcdef"


def start_demo_run(environment: LocalEnvironment, owner: str = "alice") -> dict[str, Any]:
    """Create the run `RUN_ID` asking the demo for Paris's weather; the state machine's input for it."""
    create_run(
        environment.runtime,
        messages=[ChatMessage(role="user", content="Weather in Paris?")],
        owner=owner,
        profile="default",
        run_id=RUN_ID,
    )
    return execution_input(RUN_ID)


@pytest.fixture(autouse=True)
def _forget_api_handlers() -> Iterator[None]:
    """The API handler each test loads afresh (`start_handler`, prefix ``test_api_``) is forgotten after it."""
    yield
    unload_handlers("test_api_")


@pytest.fixture
def demo_environment() -> Iterator[LocalEnvironment]:
    """config/demo.yaml with its example tool API, the embedded moto DynamoDB, and the template's handlers."""
    with (
        ExampleToolApi() as api,
        LocalEnvironment(
            config_dir=PROJECT_ROOT / "config",
            config_file="demo.yaml",
            retry_interval_scale=0.0,
            extra_environment={"STEPWISE_EXAMPLE_API_URL": api.url},
        ) as environment,
    ):
        yield environment


def stored_state(environment: LocalEnvironment, run_id: str = RUN_ID) -> dict[str, Any]:
    """Everything a retry must not change: the conversation, the trace, and the run's counters and outcome."""
    store = environment.runtime.store
    meta = store.require_run(run_id)
    return {
        "messages": [message.model_dump() for message in store.list_messages(run_id)],
        "steps": [step.model_dump(exclude={"latency_ms"}) for step in store.list_steps(run_id)],
        "meta": meta.model_dump(exclude={"updated_at"}),
    }
