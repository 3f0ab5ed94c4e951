"""A Step Functions-compatible HTTP endpoint on 127.0.0.1, running executions in the local engine.

It speaks the AWS JSON 1.0 protocol of the real service (`X-Amz-Target: AWSStepFunctions.<Operation>`)
for the operations the API uses: StartExecution, StartSyncExecution, DescribeExecution, StopExecution and,
for callback tasks (`.waitForTaskToken`), SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat. So the API
handler uses a real boto3 `stepfunctions` client pointed here by `endpoint_url`, exactly as on AWS.
Executions run in the background on a bounded thread pool; a name can be used once, as on AWS.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from stepwise.local.asl import ExecutionResult, LocalStateMachine
from stepwise.local.asl.callbacks import MAX_CAUSE_CHARS, MAX_ERROR_CHARS, CallbackError, TaskTokens
from stepwise.local.loopback import BackgroundServer
from stepwise.local.stepfunctions_wire import EndpointServer, ServiceError
from stepwise.telemetry.observability import logger

MAX_INPUT_BYTES = 256 * 1024
DEFAULT_MAX_CONCURRENT_EXECUTIONS = 8
# The lane of executions started while the others wait for callbacks: this many times the executions' own.
WAITERS_LANE_FACTOR = 4
# How long a stop waits for the steps in flight (a model call may take a while) before giving up on them.
DEFAULT_DRAIN_SECONDS = 30.0
# Step Functions names: 1-80 characters, no whitespace, no control characters and none of these.
_NAME = re.compile(r"[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]{1,80}")


@dataclass
class _Execution:
    arn: str
    state_machine_arn: str
    name: str
    input_text: str
    started_at: datetime
    status: str = "RUNNING"
    stopped_at: datetime | None = None
    output: str | None = None
    error: str | None = None
    cause: str | None = None
    future: Future[None] | None = field(default=None, repr=False)
    stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def finish(self, result: ExecutionResult) -> None:
        if self.stop.is_set():
            return  # reported ABORTED from the moment it was stopped, as the service does
        self.status = result.status
        self.stopped_at = result.stopped_at
        self.output = None if result.output is None else json.dumps(result.output)
        self.error = result.error
        self.cause = result.cause

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "executionArn": self.arn,
            "stateMachineArn": self.state_machine_arn,
            "name": self.name,
            "status": self.status,
            "startDate": self.started_at.timestamp(),
            "input": self.input_text,
        }
        optional = {
            "stopDate": self.stopped_at.timestamp() if self.stopped_at else None,
            "output": self.output,
            "error": self.error,
            "cause": self.cause,
        }
        return described | {key: value for key, value in optional.items() if value is not None}


class StepFunctionsEndpoint:
    """Serves one state machine (attached once the local environment has built it)."""

    def __init__(self, *, max_concurrent_executions: int = DEFAULT_MAX_CONCURRENT_EXECUTIONS) -> None:
        self._machine: LocalStateMachine | None = None
        self._on_end: Callable[[ExecutionResult, str], None] | None = None
        self._executions: dict[str, _Execution] = {}
        self._lock = threading.Lock()
        self._max_concurrent = max_concurrent_executions
        self._pool = ThreadPoolExecutor(max_workers=max_concurrent_executions, thread_name_prefix="local-execution")
        # An execution waiting for a callback (a parent waiting for its child run) computes nothing, but holds a
        # thread: one started while every thread is held and some wait runs here, so a child never queues
        # behind the parents waiting for it (on AWS a waiting execution holds nothing).
        self._waiters_lane = ThreadPoolExecutor(
            max_workers=max_concurrent_executions * WAITERS_LANE_FACTOR, thread_name_prefix="local-execution-lane"
        )
        self._serving: BackgroundServer | None = None
        self._operations: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "StartExecution": self.start_execution,
            "StartSyncExecution": self.start_sync_execution,
            "DescribeExecution": self.describe_execution,
            "StopExecution": self.stop_execution,
            "SendTaskSuccess": self.send_task_success,
            "SendTaskFailure": self.send_task_failure,
            "SendTaskHeartbeat": self.send_task_heartbeat,
        }

    @property
    def url(self) -> str:
        """The endpoint URL to give boto3 as `endpoint_url`."""
        if self._serving is None:
            raise RuntimeError("the Step Functions endpoint is not started")
        return self._serving.url

    def attach(
        self, machine: LocalStateMachine, *, on_end: Callable[[ExecutionResult, str], None] | None = None
    ) -> None:
        """Serve `machine`; requests before this answer StateMachineDoesNotExist.

        `on_end` gets each execution's result and input once it has ended, as Step Functions sends the
        status change to EventBridge; not an execution this endpoint's own shutdown interrupted, whose run
        the next start resumes.
        """
        self._machine = machine
        self._on_end = on_end

    def start(self) -> StepFunctionsEndpoint:
        """Listen on a free loopback port."""
        self._serving = BackgroundServer(EndpointServer(self.dispatch), name="stepfunctions-endpoint")
        return self

    def stop(self, *, drain_seconds: float = DEFAULT_DRAIN_SECONDS) -> bool:
        """Stop listening and executing; True if every in-flight step finished within `drain_seconds`.

        Executions not yet begun are dropped; running ones finish the state they are in and begin no
        other, as if stopped, but unlike StopExecution their runs stay open in the store, so the next
        start resumes them (`stepwise.local.run_recovery`) from that committed step.
        """
        if self._serving is not None:
            self._serving.stop()
            self._serving = None
        with self._lock:
            for execution in self._executions.values():
                if execution.status == "RUNNING":
                    execution.stop.set()
            # a stopped execution (StopExecution) still finishes the state it was in: it is waited for too, or
            # that step would go on writing to a store that is gone
            futures = [execution.future for execution in self._executions.values() if execution.future is not None]
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._waiters_lane.shutdown(wait=False, cancel_futures=True)
        # an execution that had not begun was cancelled with its queue: `wait` never counts a future cancelled
        # that way as done (no worker took it), and would hold the whole drain time for it
        begun = [future for future in futures if not future.cancelled()]
        _, unfinished = wait(begun, timeout=drain_seconds)
        return not unfinished

    def resume_execution(self, name: str, input: dict[str, Any]) -> None:
        """Begin an execution the endpoint did not start (a run a stopped process left open) under `name`."""
        machine = self._require_machine(self._machine.arn if self._machine else None)
        request = {"stateMachineArn": machine.arn, "name": name, "input": json.dumps(input)}
        self._new_execution(request, reuse_running=False)

    def __enter__(self) -> StepFunctionsEndpoint:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def dispatch(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run one operation; `ServiceError` for anything the real service would refuse."""
        handler = self._operations.get(operation)
        if handler is None:
            raise ServiceError("UnknownOperationException", f"{operation} is not supported by the local endpoint")
        return handler(request)

    def _require_machine(self, arn: Any) -> LocalStateMachine:
        machine = self._machine
        if machine is None or not isinstance(arn, str) or arn != machine.arn:
            raise ServiceError("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{arn}'")
        return machine

    def _new_execution(self, request: dict[str, Any], *, reuse_running: bool) -> _Execution:
        """The execution a start request names, begun on the pool (or the same one, still running)."""
        machine = self._require_machine(request.get("stateMachineArn"))
        name = request.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ServiceError("InvalidName", f"Invalid Name: '{name}'")
        input_text = request.get("input", "{}")
        if not isinstance(input_text, str) or len(input_text.encode("utf-8")) > MAX_INPUT_BYTES:
            raise ServiceError("InvalidExecutionInput", f"the input must be a JSON text of at most {MAX_INPUT_BYTES} B")
        try:
            json.loads(input_text)
        except ValueError:
            raise ServiceError("InvalidExecutionInput", "Invalid State Machine Execution Input: not JSON") from None
        arn = machine.execution_arn(name)
        with self._lock:
            existing = self._executions.get(arn)
            if existing is not None:
                # As on AWS: the same name and input while it runs is the same start; anything else is refused.
                if reuse_running and existing.status == "RUNNING" and existing.input_text == input_text:
                    return existing
                raise ServiceError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}'")
            execution = _Execution(
                arn=arn, state_machine_arn=machine.arn, name=name, input_text=input_text, started_at=datetime.now(UTC)
            )
            running = sum(1 for each in self._executions.values() if each.status == "RUNNING")
            pool = self._pool
            if running >= self._max_concurrent and machine.task_tokens.pending():
                pool = self._waiters_lane
            self._executions[arn] = execution
            execution.future = pool.submit(self._run, machine, execution)
        return execution

    def _run(self, machine: LocalStateMachine, execution: _Execution) -> None:
        try:
            result = machine.start_execution(execution.name, json.loads(execution.input_text), stop=execution.stop)
        except Exception as exc:
            # The engine itself broke: a failure, reported and delivered as the service reports one, so that
            # the run is recorded as ended (ExecutionEnded) rather than left open.
            logger.exception("local execution failed to run", extra={"execution": execution.name})
            result = ExecutionResult(
                execution_arn=execution.arn,
                name=execution.name,
                status="FAILED",
                output=None,
                error="States.Runtime",
                cause=str(exc),
                started_at=execution.started_at,
                stopped_at=datetime.now(UTC),
                history=[],
            )
        with self._lock:
            interrupted = execution.stop.is_set() and execution.status == "RUNNING"
            execution.finish(result)
        if self._on_end is not None and not interrupted:
            self._on_end(result, execution.input_text)

    def start_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        """StartExecution: begin in the background; answer at once."""
        execution = self._new_execution(request, reuse_running=True)
        return {"executionArn": execution.arn, "startDate": execution.started_at.timestamp()}

    def start_sync_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        """StartSyncExecution: run to the end and answer with the outcome."""
        execution = self._new_execution(request, reuse_running=False)
        if execution.future is not None:
            execution.future.result()
        return execution.describe()

    def _require_execution(self, arn: Any) -> _Execution:
        with self._lock:
            execution = self._executions.get(arn) if isinstance(arn, str) else None
        if execution is None:
            raise ServiceError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{arn}'")
        return execution

    def describe_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        """DescribeExecution: the execution's status so far."""
        return self._require_execution(request.get("executionArn")).describe()

    def stop_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        """StopExecution: a running execution becomes ABORTED; the engine starts no further state.

        An execution that already ended keeps its outcome.
        """
        execution = self._require_execution(request.get("executionArn"))
        with self._lock:
            if execution.status == "RUNNING":
                execution.stop.set()
                if self._machine is not None:
                    self._machine.task_tokens.end_execution(execution.arn)
                execution.status = "ABORTED"
                execution.stopped_at = datetime.now(UTC)
                execution.error = _optional_text(request.get("error"))
                execution.cause = _optional_text(request.get("cause"))
            stopped_at = execution.stopped_at or datetime.now(UTC)
        return {"stopDate": stopped_at.timestamp()}

    def _tokens(self) -> TaskTokens:
        machine = self._machine
        if machine is None:
            raise ServiceError("TaskDoesNotExist", "Task Does Not Exist: no state machine is served yet")
        return machine.task_tokens

    def send_task_success(self, request: dict[str, Any]) -> dict[str, Any]:
        """SendTaskSuccess: the waiting task ends with `output` (a JSON text) as its result."""
        output = request.get("output")
        if not isinstance(output, str) or len(output.encode("utf-8")) > MAX_INPUT_BYTES:
            raise ServiceError("InvalidOutput", f"the output must be a JSON text of at most {MAX_INPUT_BYTES} B")
        try:
            document = json.loads(output)
        except ValueError:
            raise ServiceError("InvalidOutput", "Invalid Output: not JSON") from None
        with _callback_errors():
            self._tokens().succeed(request.get("taskToken"), document)
        return {}

    def send_task_failure(self, request: dict[str, Any]) -> dict[str, Any]:
        """SendTaskFailure: the waiting task fails with `error` and `cause`, as a Catch then sees them."""
        error, cause = _optional_text(request.get("error")), _optional_text(request.get("cause"))
        if error is not None and len(error) > MAX_ERROR_CHARS:
            raise ServiceError("ValidationException", f"error: at most {MAX_ERROR_CHARS} characters")
        if cause is not None and len(cause) > MAX_CAUSE_CHARS:
            raise ServiceError("ValidationException", f"cause: at most {MAX_CAUSE_CHARS} characters")
        with _callback_errors():
            self._tokens().fail(request.get("taskToken"), error, cause)
        return {}

    def send_task_heartbeat(self, request: dict[str, Any]) -> dict[str, Any]:
        """SendTaskHeartbeat: the waiting task is alive; its HeartbeatSeconds start again."""
        with _callback_errors():
            self._tokens().beat(request.get("taskToken"), datetime.now(UTC))
        return {}


@contextmanager
def _callback_errors() -> Iterator[None]:
    try:
        yield
    except CallbackError as exc:
        raise ServiceError(exc.code, exc.message) from None


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
