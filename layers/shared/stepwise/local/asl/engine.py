"""The local Step Functions interpreter: runs a validated definition synchronously, in process.

An execution walks the states as Step Functions does (InputPath -> Parameters -> task -> ResultSelector
-> ResultPath -> OutputPath), applies Retry and Catch on Task and Map, runs Map items on a thread pool,
and reports every step to an optional listener. Time comes from an injected clock and waiting goes
through an injected `sleep`, so tests control both.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NoReturn

from stepwise.local.asl.callbacks import TaskTokens
from stepwise.local.asl.choice import parse_timestamp
from stepwise.local.asl.definition import (
    ChoiceState,
    FailState,
    MapState,
    PassState,
    State,
    StateSet,
    SucceedState,
    TaskState,
    WaitState,
    load_definition,
)
from stepwise.local.asl.errors import InvalidExecutionInput, RuntimeFailure, StatesFailure
from stepwise.local.asl.lambda_integration import LambdaInvoker
from stepwise.local.asl.processing import MAX_PAYLOAD_BYTES, check_payload_size, dynamic_text, place, select
from stepwise.local.asl.recovery import backoff_seconds, find_catcher, find_retrier
from stepwise.local.asl.results import ExecutionResult, StateEvent
from stepwise.local.asl.task_state import TaskRunner

# Step Functions names: 1-80 characters, no whitespace, no control characters and none of these.
_NAME = re.compile(r"[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]{1,80}")


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _ExecutionTimedOut(Exception):
    """The machine-level TimeoutSeconds has passed; nothing catches this."""


class _ExecutionStopped(Exception):
    """StopExecution was asked for; nothing catches this either."""


@dataclass(frozen=True)
class _Runtime:
    invoker: LambdaInvoker
    retry_interval_scale: float
    sleep: Callable[[float], None]
    clock: Callable[[], datetime]
    listener: Callable[[StateEvent], None] | None
    max_workers: int
    rng: random.Random
    invoker_copies: bool = False

    def now(self) -> datetime:
        moment = self.clock()
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class LocalStateMachine:
    """A state machine that runs locally: the definition is validated here, once.

    Thread-safe: several executions may run at the same time on different threads. The listener is
    called for every `StateEvent` as it happens, from the thread that runs the state (Map items run
    on worker threads); calls are serialised.
    """

    def __init__(
        self,
        definition: Mapping[str, Any] | str,
        invoker: LambdaInvoker,
        *,
        name: str = "agent",
        retry_interval_scale: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utc_now,
        listener: Callable[[StateEvent], None] | None = None,
        max_workers: int = 8,
        region: str = "us-east-1",
        account_id: str = "000000000000",
        rng: random.Random | None = None,
        invoker_copies: bool = False,
    ) -> None:
        """`invoker_copies`: the invoker hands each handler a payload of its own (as Lambda does, through JSON),
        so a Task's payload need not be copied before it is sent; otherwise the engine copies it, so that no
        invoker can change the execution's data."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"state machine name {name!r} is not a valid Step Functions name")
        if retry_interval_scale < 0 or max_workers < 1:
            raise ValueError("retry_interval_scale must be >= 0 and max_workers >= 1")
        self.definition = load_definition(definition)
        self.name = name
        self.arn = f"arn:aws:states:{region}:{account_id}:stateMachine:{name}"
        self._execution_arn_prefix = f"arn:aws:states:{region}:{account_id}:execution:{name}:"
        self.task_tokens = TaskTokens()
        """The tokens of callback tasks waiting for SendTaskSuccess or SendTaskFailure."""
        self._runtime = _Runtime(
            invoker, retry_interval_scale, sleep, clock, listener, max_workers, rng or random.Random(), invoker_copies
        )

    def execution_arn(self, name: str) -> str:
        """The ARN of the execution called `name`."""
        return self._execution_arn_prefix + name

    def start_execution(self, name: str, input: Any, *, stop: threading.Event | None = None) -> ExecutionResult:
        """Run one execution to its end and return how it ended.

        Raises `InvalidExecutionInput` for a name or input Step Functions would refuse; a failing
        execution is not an exception, it is a result with status FAILED or TIMED_OUT. Setting `stop`
        ends it ABORTED before the next state (or retry) begins, as StopExecution does; a task already
        running in process finishes first, and its result is dropped.
        """
        if not _NAME.fullmatch(name):
            raise InvalidExecutionInput(f"execution name {name!r}: 1-80 characters, no spaces or <>{{}}[]?*...")
        try:
            text = json.dumps(input)
        except (TypeError, ValueError) as exc:
            raise InvalidExecutionInput(f"execution input is not JSON: {exc}") from None
        if len(text.encode("utf-8")) > MAX_PAYLOAD_BYTES:
            raise InvalidExecutionInput(f"execution input is larger than {MAX_PAYLOAD_BYTES} bytes")
        return _Execution(self, self._runtime, name, json.loads(text), stop or threading.Event()).run()


class _Execution(TaskRunner):
    """One run of the machine; owns its history and its context object."""

    machine: LocalStateMachine
    runtime: _Runtime

    def __init__(
        self, machine: LocalStateMachine, runtime: _Runtime, name: str, document: Any, stop: threading.Event
    ) -> None:
        self.machine = machine
        self.stop = stop
        self.runtime = runtime
        self.name = name
        self.input = document
        self.started_at = runtime.now()
        timeout = machine.definition.timeout_seconds
        self.deadline = self.started_at + timedelta(seconds=timeout) if timeout else None
        self.history: list[StateEvent] = []
        self.lock = threading.Lock()
        self.base_context = {
            "Execution": {
                "Id": machine.execution_arn(name),
                "Name": name,
                "Input": document,
                "StartTime": _iso(self.started_at),
            },
            "StateMachine": {"Id": machine.arn, "Name": machine.name},
        }

    def run(self) -> ExecutionResult:
        status: Literal["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"] = "SUCCEEDED"
        output = error = cause = None
        try:
            output = self.run_states(self.machine.definition.states, self.input, None)
        except StatesFailure as failure:
            status, error, cause = "FAILED", failure.error, failure.cause
        except _ExecutionTimedOut:
            timeout = self.machine.definition.timeout_seconds
            status, error = "TIMED_OUT", "States.Timeout"
            cause = f"The execution ran longer than the state machine's TimeoutSeconds ({timeout})"
        except _ExecutionStopped:
            status = "ABORTED"
        return ExecutionResult(
            execution_arn=self.machine.execution_arn(self.name),
            name=self.name,
            status=status,
            output=output,
            error=error,
            cause=cause,
            started_at=self.started_at,
            stopped_at=self.runtime.now(),
            history=list(self.history),
        )

    def run_states(self, state_set: StateSet, data: Any, map_index: int | None) -> Any:
        """Run from StartAt until a state ends the run; returns the last output."""
        name: str | None = state_set.start_at
        checked: Any = None  # the last output measured: a state passing it on as it is (a Choice) is not measured again
        while name is not None:
            self.check_deadline()
            state = state_set.states[name]
            entered = self.runtime.now()
            self.emit("entered", name, map_index, data)
            try:
                next_name, output = self.run_state(name, state, data, entered, map_index)
                if output is not checked:
                    check_payload_size(output)
                    checked = output
                # a stopped execution drops what the state that was running produced
                self.check_stopped()
            except StatesFailure as failure:
                self.emit("failed", name, map_index, data, error=failure.error, cause=failure.cause)
                raise
            self.emit("exited", name, map_index, data, output=output)
            name, data = next_name, output
        return data

    def check_stopped(self) -> None:
        if self.stop.is_set():
            raise _ExecutionStopped

    def check_deadline(self) -> None:
        self.check_stopped()
        if self.deadline is not None and self.runtime.now() >= self.deadline:
            raise _ExecutionTimedOut

    def pause(self, seconds: float) -> None:
        """Sleep, but not past the machine's deadline: a long wait ends when the execution times out."""
        if self.deadline is not None:
            seconds = min(seconds, (self.deadline - self.runtime.now()).total_seconds())
        if seconds > 0:
            self.runtime.sleep(seconds)
        self.check_deadline()

    def emit(
        self,
        kind: Literal["entered", "exited", "retry", "caught", "failed"],
        state: str,
        map_index: int | None,
        state_input: Any,
        *,
        output: Any = None,
        error: str | None = None,
        cause: str | None = None,
    ) -> None:
        event = StateEvent(
            type=kind,
            state=state,
            timestamp=self.runtime.now(),
            input=state_input,
            output=output,
            error=error,
            cause=cause,
            map_index=map_index,
        )
        with self.lock:
            self.history.append(event)
            if self.runtime.listener is not None:
                self.runtime.listener(event)

    def context(self, name: str, entered: datetime, retry_count: int) -> dict[str, Any]:
        state = {"Name": name, "EnteredTime": _iso(entered), "RetryCount": retry_count}
        return {**self.base_context, "State": state}

    def run_state(
        self, name: str, state: State, data: Any, entered: datetime, map_index: int | None
    ) -> tuple[str | None, Any]:
        """Run one state; returns the next state's name (None at the end) and the output."""
        if isinstance(state, TaskState | MapState):
            return self.run_recoverable(name, state, data, entered, map_index)
        context = self.context(name, entered, 0)
        if isinstance(state, PassState):
            return state.next, self.run_pass(state, data, context)
        if isinstance(state, ChoiceState):
            return self.run_choice(state, data, context)
        if isinstance(state, WaitState):
            return state.next, self.run_wait(state, data, context)
        if isinstance(state, SucceedState):
            return None, select(state.output_path, select(state.input_path, data, context), context)
        return self.run_fail(state, data, context)

    def run_recoverable(
        self, name: str, state: TaskState | MapState, data: Any, entered: datetime, map_index: int | None
    ) -> tuple[str | None, Any]:
        """Run a Task or Map with its Retry and Catch lists."""
        retries_per_retrier = [0] * len(state.retry)
        retries = 0
        while True:
            context = self.context(name, entered, retries)
            try:
                if isinstance(state, TaskState):
                    return state.next, self.run_task(state, data, context)
                return state.next, self.run_map(state, data, context)
            except StatesFailure as failure:
                index = find_retrier(state.retry, failure.error)
                if index is not None and retries_per_retrier[index] < state.retry[index].max_attempts:
                    delay = backoff_seconds(state.retry[index], retries_per_retrier[index], self.runtime.rng)
                    retries_per_retrier[index] += 1
                    retries += 1
                    self.emit("retry", name, map_index, data, error=failure.error, cause=failure.cause)
                    self.pause(delay * self.runtime.retry_interval_scale)
                    continue
                catcher = find_catcher(state.catch, failure.error)
                if catcher is None:
                    raise
                self.emit("caught", name, map_index, data, error=failure.error, cause=failure.cause)
                error_output = {"Error": failure.error, "Cause": failure.cause}
                return catcher.next, place(catcher.result_path, data, error_output)

    def finish(self, state: TaskState | MapState, data: Any, result: Any, context: Any) -> Any:
        """ResultSelector, then ResultPath onto the raw input, then OutputPath."""
        if state.result_selector is not None:
            result = state.result_selector.render(result, context)
        return select(state.output_path, place(state.result_path, data, result), context)

    def run_map(self, state: MapState, data: Any, context: dict[str, Any]) -> Any:
        effective = select(state.input_path, data, context)
        items = state.items_path.evaluate(effective, context)
        if not isinstance(items, list):
            raise RuntimeFailure(f"ItemsPath {state.items_path.source!r} must select an array")
        selector = state.selector
        inputs = [
            selector.render(effective, {**context, "Map": {"Item": {"Index": index, "Value": item}}})
            if selector is not None
            else item
            for index, item in enumerate(items)
        ]
        limit = state.max_concurrency
        if state.max_concurrency_path is not None:
            limit = state.max_concurrency_path.evaluate(effective, context)
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise RuntimeFailure(f"MaxConcurrencyPath must select a non-negative integer, got {limit!r}")
        return self.finish(state, data, self.run_items(state.processor, inputs, limit), context)

    def run_items(self, processor: StateSet, inputs: list[Any], limit: int) -> list[Any]:
        """Each item through the processor, at most `limit` (0: no limit) at once; results in item order."""
        workers = min(limit or len(inputs), self.runtime.max_workers, len(inputs))
        if workers <= 1:
            return [self.run_states(processor, item, index) for index, item in enumerate(inputs)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"map-{self.name}") as pool:
            futures = [pool.submit(self.run_states, processor, item, index) for index, item in enumerate(inputs)]
            try:
                return [future.result() for future in futures]
            finally:
                # On a failure, items not started yet are not started at all.
                for future in futures:
                    future.cancel()

    def run_pass(self, state: PassState, data: Any, context: Any) -> Any:
        effective = select(state.input_path, data, context)
        if state.parameters is not None:
            effective = state.parameters.render(effective, context)
        result = state.result if state.has_result else effective
        return select(state.output_path, place(state.result_path, data, result), context)

    def run_choice(self, state: ChoiceState, data: Any, context: Any) -> tuple[str, Any]:
        effective = select(state.input_path, data, context)
        target = next((branch.next for branch in state.choices if branch.rule.matches(effective, context)), None)
        target = target or state.default
        if target is None:
            raise StatesFailure("States.NoChoiceMatched", "No Choice rule matched and the state has no Default")
        return target, select(state.output_path, effective, context)

    def run_wait(self, state: WaitState, data: Any, context: Any) -> Any:
        effective = select(state.input_path, data, context)
        self.pause(self.wait_seconds(state, effective, context))
        return select(state.output_path, effective, context)

    def wait_seconds(self, state: WaitState, effective: Any, context: Any) -> float:
        if state.seconds is not None:
            return state.seconds
        if state.seconds_path is not None:
            seconds = state.seconds_path.evaluate(effective, context)
            if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
                raise RuntimeFailure(f"SecondsPath must select a non-negative integer, got {seconds!r}")
            return seconds
        if state.timestamp is not None:
            stamp: Any = state.timestamp
        else:
            assert state.timestamp_path is not None  # the definition requires one of the four fields
            stamp = state.timestamp_path.evaluate(effective, context)
        moment = parse_timestamp(stamp)
        if moment is None:
            raise RuntimeFailure(f"TimestampPath must select an RFC 3339 timestamp, got {stamp!r}")
        return (moment - self.runtime.now()).total_seconds()

    def run_fail(self, state: FailState, data: Any, context: Any) -> NoReturn:
        error = state.error if state.error_path is None else dynamic_text(state.error_path, data, context, "ErrorPath")
        cause = state.cause if state.cause_path is None else dynamic_text(state.cause_path, data, context, "CausePath")
        raise StatesFailure(error, cause)
