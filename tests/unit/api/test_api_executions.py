"""Starting executions through a boto3 stepfunctions client (stubbed at the wire)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.errors import ConfigError
from stepwise.steps.executions import ExecutionStartFailed, StepFunctionsExecutions

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:agent"


@pytest.fixture
def stepfunctions() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber


def test_an_execution_is_named_after_the_run_and_given_its_input(stepfunctions: tuple[Any, Stubber]) -> None:
    client, stubber = stepfunctions
    # Given Step Functions expecting the run's execution
    execution_input = {"run_id": "r1", "iteration": 0}
    stubber.add_response(
        "start_execution",
        {"executionArn": f"{ARN}:r1", "startDate": datetime.now(UTC)},
        {"stateMachineArn": ARN, "name": "r1", "input": json.dumps(execution_input)},
    )
    # When the run is started
    started = StepFunctionsExecutions(client, ARN).start("r1", execution_input)
    # Then the execution's ARN is returned
    assert started == f"{ARN}:r1"


def test_a_throttled_start_is_a_failure_to_start_naming_the_reason(stepfunctions: tuple[Any, Stubber]) -> None:
    client, stubber = stepfunctions
    # Given Step Functions refusing the start
    stubber.add_client_error("start_execution", "ExecutionLimitExceeded", "limit")
    # When the run is started, then the failure names the service's error
    with pytest.raises(ExecutionStartFailed, match="ExecutionLimitExceeded: limit"):
        StepFunctionsExecutions(client, ARN).start("r1", {})


def test_without_a_state_machine_runs_cannot_be_started(stepfunctions: tuple[Any, Stubber]) -> None:
    client, _ = stepfunctions
    # Given a deployment that set no state machine
    executions = StepFunctionsExecutions(client, None)
    # When a run is started, then the configuration is at fault
    with pytest.raises(ConfigError, match="STATE_MACHINE_ARN"):
        executions.start("r1", {})
