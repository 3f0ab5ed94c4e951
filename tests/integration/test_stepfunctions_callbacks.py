"""SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat on the local Step Functions endpoint, sent by
a real boto3 client, with the error codes botocore's model of the service names (TaskTimedOut,
TaskDoesNotExist, InvalidToken, InvalidOutput)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from stepwise.local.asl import LocalStateMachine
from stepwise.local.asl.callbacks import TOKEN_PREFIX
from stepwise.local.stepfunctions_endpoint import StepFunctionsEndpoint

# One callback Task: its function hands the token out; the execution's output is the token's answer.
CALLBACK_MACHINE = {
    "StartAt": "Ask",
    "States": {
        "Ask": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": "ask", "Payload": {"token.$": "$$.Task.Token"}},
            "TimeoutSeconds": 60,
            "End": True,
        }
    },
}


class TokenBox:
    """The `ask` function: puts each token it is given where the test can take it."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.arrived = threading.Event()

    def __call__(self, function_name: str, payload: Any) -> Any:
        self.tokens.append(payload["token"])
        self.arrived.set()
        return {}

    def take(self) -> str:
        assert self.arrived.wait(timeout=10), "the callback task never invoked its function"
        return self.tokens[-1]


@pytest.fixture
def box() -> TokenBox:
    return TokenBox()


@pytest.fixture
def endpoint(box: TokenBox) -> Iterator[StepFunctionsEndpoint]:
    served = StepFunctionsEndpoint(max_concurrent_executions=2).start()
    served.attach(LocalStateMachine(CALLBACK_MACHINE, box, name="agent"))
    yield served
    served.stop(drain_seconds=5)


@pytest.fixture
def sfn(endpoint: StepFunctionsEndpoint) -> Any:
    return boto3.client(
        "stepfunctions",
        region_name="us-east-1",
        endpoint_url=endpoint.url,
        config=Config(inject_host_prefix=False, retries={"total_max_attempts": 1}),
    )


def _start(sfn: Any) -> str:
    arn: str = sfn.start_execution(
        stateMachineArn="arn:aws:states:us-east-1:000000000000:stateMachine:agent", name="exec-1", input="{}"
    )["executionArn"]
    return arn


def _ended(sfn: Any, arn: str) -> dict[str, Any]:
    for _ in range(500):
        described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.02)
    raise AssertionError("the execution did not end")


def _error_code(call: Any) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return str(refused.value.response["Error"]["Code"])


def test_send_task_success_ends_the_waiting_task_with_its_output(sfn: Any, box: TokenBox) -> None:
    # Given an execution waiting on its callback task
    arn = _start(sfn)

    # When the token is answered with SendTaskSuccess
    sfn.send_task_success(taskToken=box.take(), output=json.dumps({"approved": True}))

    # Then the execution succeeds with that output
    described = _ended(sfn, arn)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"approved": True}


def test_send_task_failure_fails_the_task_with_its_error_and_cause(sfn: Any, box: TokenBox) -> None:
    # Given an execution waiting on its callback task (no Catch)
    arn = _start(sfn)

    # When the token is answered with SendTaskFailure
    sfn.send_task_failure(taskToken=box.take(), error="Denied", cause="not today")

    # Then the execution fails with that error and cause
    described = _ended(sfn, arn)
    assert (described["status"], described["error"], described["cause"]) == ("FAILED", "Denied", "not today")


def test_a_heartbeat_is_accepted_while_the_task_waits(sfn: Any, box: TokenBox) -> None:
    # Given an execution waiting on its callback task
    arn = _start(sfn)
    token = box.take()

    # When a heartbeat is sent, then the answer
    heartbeat = sfn.send_task_heartbeat(taskToken=token)
    sfn.send_task_success(taskToken=token, output="{}")

    # Then the heartbeat was accepted and the execution went on to succeed
    assert heartbeat["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert _ended(sfn, arn)["status"] == "SUCCEEDED"


def test_answering_a_token_twice_is_task_timed_out(sfn: Any, box: TokenBox) -> None:
    # Given a token already answered
    arn = _start(sfn)
    token = box.take()
    sfn.send_task_success(taskToken=token, output="{}")
    _ended(sfn, arn)

    # When it is answered again / Then the service's TaskTimedOut comes back, for success and heartbeat alike
    assert _error_code(lambda: sfn.send_task_failure(taskToken=token, error="Denied")) == "TaskTimedOut"
    assert _error_code(lambda: sfn.send_task_heartbeat(taskToken=token)) == "TaskTimedOut"


def test_a_stopped_execution_cannot_be_answered(sfn: Any, box: TokenBox) -> None:
    # Given an execution waiting on its callback task, then stopped
    arn = _start(sfn)
    token = box.take()
    sfn.stop_execution(executionArn=arn)

    # When its token is answered / Then the task no longer exists to answer
    assert _error_code(lambda: sfn.send_task_success(taskToken=token, output="{}")) == "TaskTimedOut"
    assert sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"


def test_tokens_the_endpoint_never_issued_are_refused(sfn: Any) -> None:
    # Given no execution at all
    # When a well-formed unknown token and a malformed one are answered
    unknown = _error_code(lambda: sfn.send_task_success(taskToken=TOKEN_PREFIX + "B" * 64, output="{}"))
    malformed = _error_code(lambda: sfn.send_task_success(taskToken="garbage", output="{}"))

    # Then they are TaskDoesNotExist and InvalidToken
    assert (unknown, malformed) == ("TaskDoesNotExist", "InvalidToken")


def test_an_output_that_is_not_json_is_invalid_output(sfn: Any, box: TokenBox) -> None:
    # Given an execution waiting on its callback task
    arn = _start(sfn)
    token = box.take()

    # When the answer's output is not JSON / Then it is refused and the task still waits for a valid one
    assert _error_code(lambda: sfn.send_task_success(taskToken=token, output="{not json")) == "InvalidOutput"
    sfn.send_task_success(taskToken=token, output='"fine"')
    assert _ended(sfn, arn)["status"] == "SUCCEEDED"
