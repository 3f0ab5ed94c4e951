"""Lambda invocations in worker processes (`stepwise serve --workers N`): results, errors and crashes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from stepwise.local.asl import LocalStateMachine
from stepwise.local.asl.errors import TaskError
from stepwise.local.lambda_workers import LambdaWorkers

from .support import FIXTURES, FakeClock, RecordingSleep

TEMPLATE = FIXTURES / "workers" / "template.yaml"
PROCESS_ARN = "arn:aws:lambda:us-east-1:000000000000:function:ProcessFunction"


@pytest.fixture
def workers() -> Iterator[LambdaWorkers]:
    with LambdaWorkers(TEMPLATE, workers=2) as started:
        yield started


def test_an_invocation_runs_in_a_worker_process_and_returns_the_handlers_result(workers: LambdaWorkers) -> None:
    # Given two started workers
    # When a function is invoked by ARN
    result = workers(PROCESS_ARN, {"question": "why?"})

    # Then one of the workers ran it, not this process, and the event arrived whole
    assert result["pid"] in workers.pids
    assert result["pid"] != os.getpid()
    assert result["echo"] == {"question": "why?"}


def test_a_handler_exception_is_reported_under_its_class_name_with_lambdas_cause(workers: LambdaWorkers) -> None:
    # Given a function that raises LLMTransientError
    # When it is invoked in a worker
    with pytest.raises(TaskError) as raised:
        workers("FailFunction", {"question": "why?"})

    # Then the error is the exception's class name and the cause is the Lambda runtime's JSON shape
    assert raised.value.error == "LLMTransientError"
    cause = json.loads(raised.value.cause)
    assert cause["errorType"] == "LLMTransientError"
    assert "upstream said 503 for why?" in cause["errorMessage"]


def test_a_worker_that_exits_mid_invocation_fails_it_as_a_service_exception_and_is_replaced(
    workers: LambdaWorkers,
) -> None:
    # Given two workers
    before = set(workers.pids)

    # When a handler ends its worker's process during the invocation
    with pytest.raises(TaskError) as raised:
        workers(PROCESS_ARN, {"exit": 3})

    # Then the invocation failed as Lambda.ServiceException, naming the exit code
    assert raised.value.error == "Lambda.ServiceException"
    assert "code 3" in json.loads(raised.value.cause)["errorMessage"]
    # And the next invocations are answered, by two workers again, one of them new
    answers = [workers(PROCESS_ARN, {"index": index})["pid"] for index in range(4)]
    assert len(workers.pids) == 2
    assert set(answers) <= set(workers.pids)
    assert len(set(workers.pids) - before) == 1


def test_stopped_workers_have_exited(workers: LambdaWorkers) -> None:
    # Given two workers that have served an invocation
    workers(PROCESS_ARN, {})
    pids = workers.pids

    # When they are stopped
    workers.stop()

    # Then no worker process is left
    assert workers.pids == []
    assert [pid for pid in pids if _running(pid)] == []


def test_a_run_whose_worker_crashes_is_retried_then_caught_and_ends_in_a_terminal_status(
    workers: LambdaWorkers,
) -> None:
    # Given a state machine whose Task retries Lambda.ServiceException once, then catches every error
    definition = {
        "StartAt": "Crash",
        "States": {
            "Crash": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": PROCESS_ARN, "Payload": {"exit": 9}},
                "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "IntervalSeconds": 1, "MaxAttempts": 1}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recovered"}],
                "End": True,
            },
            "Recovered": {"Type": "Pass", "End": True},
        },
    }
    sleep = RecordingSleep()
    machine = LocalStateMachine(definition, workers, sleep=sleep, clock=FakeClock())

    # When an execution runs, and its function's worker exits at each attempt
    result = machine.start_execution("crashing", {})

    # Then it was retried once, caught, and succeeded with the service exception as its error
    output: dict[str, Any] = result.output
    assert result.status == "SUCCEEDED"
    assert sleep.calls == [1]
    assert output["error"]["Error"] == "Lambda.ServiceException"
    # And the workers were replaced for what comes next
    assert workers(PROCESS_ARN, {})["pid"] in workers.pids


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
