"""Running a Task state: invoke the function, and for the callback pattern wait for its token's answer."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from datetime import datetime
from email.utils import format_datetime
from typing import Any, Protocol

from stepwise.local.asl.callbacks import TaskTokens, await_outcome
from stepwise.local.asl.definition import TaskState
from stepwise.local.asl.errors import RuntimeFailure, StatesFailure
from stepwise.local.asl.lambda_integration import LambdaInvoker, call_function, invoke_result
from stepwise.local.asl.paths import JsonPath
from stepwise.local.asl.processing import select


class _TaskMachine(Protocol):
    """What a Task needs of its state machine: the task tokens of callback tasks."""

    task_tokens: TaskTokens


class _TaskRuntime(Protocol):
    """What a Task needs of the engine's runtime: the functions to invoke, and the time."""

    @property
    def invoker(self) -> LambdaInvoker:
        """The functions of the template, by name."""
        ...

    @property
    def invoker_copies(self) -> bool:
        """True when the invoker hands each handler a payload of its own."""
        ...

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


def _seconds(fixed: int | None, path: JsonPath | None, effective: Any, context: Any, field: str) -> int | None:
    """A timeout given as a number, or read from the state's input by a path (a positive integer)."""
    if path is None:
        return fixed
    value = path.evaluate(effective, context)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RuntimeFailure(f"{field} must select a positive integer, got {value!r}")
    return value


class TaskRunner:
    """The Task half of an execution (mixed into it): what it needs of the execution is declared here."""

    machine: _TaskMachine
    runtime: _TaskRuntime
    base_context: dict[str, Any]
    # Provided by the execution this is mixed into: raise if it was stopped or ran past its own timeout;
    # and apply a state's ResultSelector, ResultPath and OutputPath.
    check_deadline: Callable[[], None]
    finish: Callable[[TaskState, Any, Any, Any], Any]

    def run_task(self, state: TaskState, data: Any, context: Any) -> Any:
        effective = select(state.input_path, data, context)
        timeout = _seconds(state.timeout_seconds, state.timeout_seconds_path, effective, context, "TimeoutSecondsPath")
        started = self.runtime.now()
        tokens = self.machine.task_tokens
        token = tokens.issue(self.base_context["Execution"]["Id"], started) if state.waits_for_token else None
        if token is not None:
            context = {**context, "Task": {"Token": token}}
        try:
            parameters = state.parameters.render(effective, context) if state.parameters else {}
            function_name = parameters.get("FunctionName")
            if not isinstance(function_name, str):
                raise RuntimeFailure(f"FunctionName must be a string, got {function_name!r}")
            payload = parameters.get("Payload", {})
            failure: StatesFailure | None = None
            try:
                returned = call_function(
                    self.runtime.invoker,
                    function_name,
                    payload if self.runtime.invoker_copies else copy.deepcopy(payload),
                )
            except StatesFailure as exc:
                failure = exc
            finished = self.runtime.now()
            # A handler cannot be interrupted in process: an attempt that ends late counts as timed out.
            if timeout is not None and (finished - started).total_seconds() > timeout:
                raise StatesFailure("States.Timeout", f"The task did not finish within {timeout} seconds")
            if failure is not None:
                raise failure
            if token is None:
                result = invoke_result(returned, str(uuid.uuid4()), format_datetime(finished, usegmt=True))
            else:
                result = self.await_callback(state, token, started, timeout, effective, context)
        finally:
            if token is not None:
                tokens.end(token)
        return self.finish(state, data, result, context)

    def await_callback(
        self, state: TaskState, token: str, started: datetime, timeout: int | None, effective: Any, context: Any
    ) -> Any:
        """The output SendTaskSuccess gave the token, or the failure SendTaskFailure (or a timeout) raised."""
        heartbeat = _seconds(
            state.heartbeat_seconds, state.heartbeat_seconds_path, effective, context, "HeartbeatSecondsPath"
        )
        outcome = await_outcome(
            self.machine.task_tokens,
            token,
            started=started,
            timeout_seconds=timeout,
            heartbeat_seconds=heartbeat,
            now=self.runtime.now,
            check=self.check_deadline,
        )
        if not outcome.succeeded:
            raise StatesFailure(outcome.error, outcome.cause)
        return outcome.output
