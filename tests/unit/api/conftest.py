"""Services of the API over a moto table, with Step Functions stubbed at the wire (botocore Stubber)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunMeta
from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore

STATE_MACHINE_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:agent"
START = 1_800_000_000.0


@dataclass
class FakeTime:
    """Wall clock and monotonic clock in one; `sleep` advances both and records what it was asked."""

    now: float = START
    slept: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class ApiWorld:
    services: ApiServices
    stubber: Stubber
    time: FakeTime
    dynamodb: Any
    table: str

    def stored_runs(self) -> list[RunMeta]:
        """Every run in the table."""
        items = self.dynamodb.scan(TableName=self.table)["Items"]
        store = self.services.runtime.store
        return [store.require_run(item["pk"]["S"].removeprefix("RUN#")) for item in items if item["sk"]["S"] == "META"]

    def queued_run(self, question: str = "hi", owner: str = "owner") -> RunMeta:
        return create_run(
            self.services.runtime,
            messages=[ChatMessage(role="user", content=question)],
            owner=owner,
            profile="default",
        )


def api_config(**sections: Any) -> StepwiseConfig:
    return StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "unused"}]}]}},
            "profiles": {"default": {"model": "m"}, "finance": {"model": "m"}},
            "api": {"max_messages": 3, "max_input_chars": 20, "sync_timeout_seconds": 2},
            **sections,
        }
    )


@pytest.fixture
def world(dynamodb_table: tuple[Any, str]) -> Iterator[ApiWorld]:
    client, table = dynamodb_table
    fake_time = FakeTime()
    runtime = StepRuntime(
        config=api_config(), config_dir=Path("."), store=ConversationStore(client, table), clock=fake_time.clock
    )
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(stepfunctions) as stubber:
        services = ApiServices(
            runtime=runtime,
            executions=StepFunctionsExecutions(stepfunctions, STATE_MACHINE_ARN),
            idempotency=IdempotentStarts(client, table),
            sleep=fake_time.sleep,
            monotonic=fake_time.clock,
        )
        yield ApiWorld(services, stubber, fake_time, client, table)
