"""The local Step Functions endpoint, driven by real boto3 clients as the API drives AWS."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from stepwise.config.settings import Settings
from stepwise.local.asl import LocalStateMachine
from stepwise.local.stepfunctions_endpoint import StepFunctionsEndpoint
from stepwise.steps.executions import ExecutionStartFailed, StepFunctionsExecutions, SyncExecutionTimedOut
from tests.support.asl_machines import lambda_task
from tests.support.polling import wait_for

# One Task: the test's function decides when it returns (it waits for `released`).
WAITING_MACHINE = {
    "StartAt": "Work",
    "States": {"Work": lambda_task("work", OutputPath="$.Payload", End=True)},
}
FAILING_MACHINE = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"}}}


class Work:
    """The function of WAITING_MACHINE: doubles `n`, once `released` is set."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.released.set()

    def __call__(self, function_name: str, payload: Any) -> Any:
        self.released.wait(timeout=10)
        return {"doubled": payload["n"] * 2}


Serve = Callable[[dict[str, Any]], tuple[StepFunctionsEndpoint, LocalStateMachine]]


@pytest.fixture
def work() -> Work:
    return Work()


@pytest.fixture
def serve(work: Work) -> Iterator[Serve]:
    endpoints: list[StepFunctionsEndpoint] = []

    def start(definition: dict[str, Any]) -> tuple[StepFunctionsEndpoint, LocalStateMachine]:
        machine = LocalStateMachine(definition, work, name="agent")
        endpoint = StepFunctionsEndpoint(max_concurrent_executions=2).start()
        endpoint.attach(machine)
        endpoints.append(endpoint)
        return endpoint, machine

    yield start
    work.released.set()
    for endpoint in endpoints:
        endpoint.stop()


def client(endpoint: StepFunctionsEndpoint) -> Any:
    return boto3.client(
        "stepfunctions",
        region_name="us-east-1",
        endpoint_url=endpoint.url,
        config=Config(inject_host_prefix=False, retries={"total_max_attempts": 1}),
    )


def executions(endpoint: StepFunctionsEndpoint, machine: LocalStateMachine, *, timeout: float = 0.3) -> Any:
    settings = Settings(table_name="unused", stepfunctions_endpoint_url=endpoint.url, state_machine_arn=machine.arn)
    return StepFunctionsExecutions.from_settings(settings, sync_timeout_seconds=timeout)


def described_when_done(sfn: Any, arn: str) -> dict[str, Any]:
    """The execution once it is no longer RUNNING; fails with its last description if it stays so."""

    def describe() -> dict[str, Any]:
        described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
        return described

    return wait_for(
        describe, lambda described: described["status"] != "RUNNING", what=f"execution {arn} ended", interval=0.02
    )


def test_a_started_execution_runs_in_the_background_and_is_described_when_done(serve: Serve) -> None:
    # Given the endpoint serving a machine
    endpoint, machine = serve(WAITING_MACHINE)
    sfn = client(endpoint)
    # When an execution is started
    started = sfn.start_execution(stateMachineArn=machine.arn, name="run-1", input=json.dumps({"n": 21}))
    # Then it is named as asked, and ends SUCCEEDED with the machine's output
    described = described_when_done(sfn, started["executionArn"])
    assert started["executionArn"] == machine.execution_arn("run-1")
    assert (described["status"], json.loads(described["output"])) == ("SUCCEEDED", {"doubled": 42})


def test_a_synchronous_execution_answers_with_its_outcome(serve: Serve) -> None:
    # Given the endpoint serving a machine that fails
    endpoint, machine = serve(FAILING_MACHINE)
    # When an execution is run synchronously through the API's client
    result = executions(endpoint, machine).start_sync("run-1", {})
    # Then the answer is the failure the machine ended with
    assert (result.status, result.error, result.cause) == ("FAILED", "Boom", "on purpose")


def test_a_synchronous_execution_slower_than_the_callers_wait_times_out_and_goes_on(serve: Serve, work: Work) -> None:
    # Given a machine whose work is held back
    endpoint, machine = serve(WAITING_MACHINE)
    work.released.clear()
    # When it is run synchronously with a short wait
    with pytest.raises(SyncExecutionTimedOut):
        executions(endpoint, machine, timeout=0.2).start_sync("run-1", {"n": 1})
    # Then the execution is still running, and ends once its work is done
    sfn = client(endpoint)
    assert sfn.describe_execution(executionArn=machine.execution_arn("run-1"))["status"] == "RUNNING"
    work.released.set()
    assert described_when_done(sfn, machine.execution_arn("run-1"))["status"] == "SUCCEEDED"


def test_a_name_is_used_once_but_repeating_a_running_start_is_the_same_start(serve: Serve, work: Work) -> None:
    # Given a running execution
    endpoint, machine = serve(WAITING_MACHINE)
    work.released.clear()
    sfn = client(endpoint)
    first = sfn.start_execution(stateMachineArn=machine.arn, name="run-1", input='{"n": 1}')
    # When the same start is repeated, and the name is used with another input
    repeated = sfn.start_execution(stateMachineArn=machine.arn, name="run-1", input='{"n": 1}')
    with pytest.raises(ClientError) as refused:
        sfn.start_execution(stateMachineArn=machine.arn, name="run-1", input='{"n": 2}')
    # Then the repeat is the same execution, and the other input is refused as AWS refuses it
    assert repeated["executionArn"] == first["executionArn"]
    assert refused.value.response["Error"]["Code"] == "ExecutionAlreadyExists"


@pytest.mark.parametrize(
    ("request_fields", "code"),
    [
        pytest.param({"stateMachineArn": "arn:aws:states:us-east-1:0:stateMachine:other"}, "StateMachineDoesNotExist"),
        pytest.param({"name": "has space"}, "InvalidName"),
        pytest.param({"input": "{not json"}, "InvalidExecutionInput"),
    ],
)
def test_a_start_the_service_would_refuse_is_refused_with_its_error_code(
    serve: Serve, request_fields: dict[str, str], code: str
) -> None:
    # Given the endpoint serving a machine
    endpoint, machine = serve(WAITING_MACHINE)
    request = {"stateMachineArn": machine.arn, "name": "run-1", "input": "{}"} | request_fields
    # When the start is sent
    with pytest.raises(ClientError) as refused:
        client(endpoint).start_execution(**request)
    # Then the error is the one Step Functions names
    assert refused.value.response["Error"]["Code"] == code


def test_the_api_reports_a_refused_start_as_a_failure_to_start(serve: Serve) -> None:
    # Given a client configured with a state machine the endpoint does not serve
    endpoint, _ = serve(WAITING_MACHINE)
    settings = Settings(
        table_name="unused",
        stepfunctions_endpoint_url=endpoint.url,
        state_machine_arn="arn:aws:states:us-east-1:000000000000:stateMachine:gone",
    )
    starter = StepFunctionsExecutions.from_settings(settings, sync_timeout_seconds=1)
    # When a run is started
    with pytest.raises(ExecutionStartFailed) as failed:
        starter.start("run-1", {})
    # Then the failure says what Step Functions answered
    assert "StateMachineDoesNotExist" in str(failed.value)


# Two Tasks in a row, both the test's function: a stop during the first must keep the second from running.
TWO_TASK_MACHINE = {
    "StartAt": "First",
    "States": {
        "First": lambda_task("work", ResultSelector={"n.$": "$.Payload.doubled"}, Next="Second"),
        "Second": lambda_task("work", OutputPath="$.Payload", End=True),
    },
}


class CountingWork(Work):
    """Work that counts its calls and says when the first one has begun."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.begun = threading.Event()

    def __call__(self, function_name: str, payload: Any) -> Any:
        self.calls += 1
        self.begun.set()
        return super().__call__(function_name, payload)


def test_a_stopped_execution_is_aborted_and_starts_no_further_state() -> None:
    # Given an execution whose first task is running
    work = CountingWork()
    work.released.clear()
    machine = LocalStateMachine(TWO_TASK_MACHINE, work, name="agent")
    with StepFunctionsEndpoint(max_concurrent_executions=1) as endpoint:
        endpoint.attach(machine)
        starter = executions(endpoint, machine)
        arn = starter.start("run-1", {"n": 1})
        assert work.begun.wait(timeout=10)
        # When it is stopped, and the running task then finishes
        assert starter.stop("run-1", cause="cancelled") is True
        work.released.set()
        described = described_when_done(client(endpoint), arn)
    # Then it is ABORTED with the cause given, and the second task never ran
    assert (described["status"], described.get("cause"), work.calls) == ("ABORTED", "cancelled", 1)


def test_stopping_an_execution_that_does_not_exist_says_so(serve: Serve) -> None:
    # Given the endpoint serving a machine
    endpoint, machine = serve(WAITING_MACHINE)
    # When an execution never started is stopped
    stopped = executions(endpoint, machine).stop("never-started", cause="cancelled")
    # Then there was nothing to stop
    assert stopped is False


def test_stopping_an_execution_that_ended_keeps_its_outcome(serve: Serve) -> None:
    # Given an execution that succeeded
    endpoint, machine = serve(WAITING_MACHINE)
    sfn = client(endpoint)
    arn = sfn.start_execution(stateMachineArn=machine.arn, name="run-1", input='{"n": 2}')["executionArn"]
    described_when_done(sfn, arn)
    # When it is stopped
    executions(endpoint, machine).stop("run-1", cause="too late")
    # Then it is still SUCCEEDED
    assert sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"


def test_an_execution_stopped_by_stop_execution_is_reported_ended_aborted() -> None:
    # Given an execution whose first task is running, on an endpoint that reports ended executions
    work = CountingWork()
    work.released.clear()
    machine = LocalStateMachine(TWO_TASK_MACHINE, work, name="agent")
    ended: list[tuple[str, str, str]] = []
    with StepFunctionsEndpoint(max_concurrent_executions=1) as endpoint:
        endpoint.attach(machine, on_end=lambda result, text: ended.append((result.name, result.status, text)))
        starter = executions(endpoint, machine)
        arn = starter.start("run-1", {"n": 1})
        assert work.begun.wait(timeout=10)
        # When StopExecution stops it and its running task finishes
        starter.stop("run-1", cause="stopped from the console")
        work.released.set()
        described_when_done(client(endpoint), arn)
    # Then its end was reported once, ABORTED, with its input, as EventBridge would get it
    assert ended == [("run-1", "ABORTED", '{"n": 1}')]


def test_an_execution_the_endpoint_shutdown_interrupts_is_not_reported_ended() -> None:
    # Given an execution whose first task is running, on an endpoint that reports ended executions
    work = CountingWork()
    work.released.clear()
    machine = LocalStateMachine(TWO_TASK_MACHINE, work, name="agent")
    ended: list[str] = []
    endpoint = StepFunctionsEndpoint(max_concurrent_executions=1).start()
    endpoint.attach(machine, on_end=lambda result, text: ended.append(result.status))
    executions(endpoint, machine).start("run-1", {"n": 1})
    assert work.begun.wait(timeout=10)
    # When the endpoint itself stops (serve's shutdown) while the task finishes
    threading.Timer(0.1, work.released.set).start()
    drained = endpoint.stop(drain_seconds=10)
    # Then nothing was reported: its run stays open for the next start to resume
    assert drained is True
    assert ended == []


def test_executions_not_yet_begun_when_the_endpoint_stops_are_dropped_and_do_not_hold_the_drain() -> None:
    # Given one execution slot, taken by an execution whose task is running, and two more executions queued
    work = CountingWork()
    work.released.clear()
    machine = LocalStateMachine(TWO_TASK_MACHINE, work, name="agent")
    endpoint = StepFunctionsEndpoint(max_concurrent_executions=1).start()
    endpoint.attach(machine)
    starter = executions(endpoint, machine)
    for name in ("run-1", "run-2", "run-3"):
        starter.start(name, {"n": 1})
    assert work.begun.wait(timeout=10)
    # When the endpoint stops while the running task finishes
    threading.Timer(0.1, work.released.set).start()
    drained = endpoint.stop(drain_seconds=10)
    # Then the stop reports every begun step drained (the queued executions, dropped, are not waited for), and
    # only the first execution ran a task
    assert drained is True
    assert work.calls == 1


def test_an_execution_the_engine_cannot_run_is_reported_ended_failed() -> None:
    # Given an engine that breaks on every execution (its listener fails, as a trace printer whose pipe
    # closed does), on an endpoint that reports ended executions
    def broken_listener(event: Any) -> None:
        raise BrokenPipeError("the trace's reader went away")

    machine = LocalStateMachine(WAITING_MACHINE, Work(), name="agent", listener=broken_listener)
    ended: list[tuple[str, str | None, str]] = []
    with StepFunctionsEndpoint(max_concurrent_executions=1) as endpoint:
        endpoint.attach(machine, on_end=lambda result, text: ended.append((result.status, result.error, text)))
        # When an execution is started
        arn = executions(endpoint, machine).start("run-1", {"n": 1})
        described = described_when_done(client(endpoint), arn)
    # Then it is described FAILED and its end is reported, so the run it carries is recorded as ended
    assert (described["status"], described["error"]) == ("FAILED", "States.Runtime")
    assert ended == [("FAILED", "States.Runtime", '{"n": 1}')]
