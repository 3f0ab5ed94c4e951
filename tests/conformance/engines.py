"""One run of the agent state machine as each engine reports it, in a form the two can be compared in.

The local engine reports an `ExecutionResult` with its history of `StateEvent`s; moto's Step Functions
interpreter reports `DescribeExecution` and `GetExecutionHistory`. Both become an `EngineRun`. What
differs by construction is taken out: the run id (each engine runs its own run of the same question)
becomes `<run_id>`, and an error's cause (at the end, or caught into a state's output) keeps the
Lambda runtime's `errorType` and `errorMessage` but not its stack trace or request id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepwise.local.asl import ExecutionResult
from stepwise.local.environment import LocalEnvironment
from stepwise.models.run import RunMeta
from stepwise.steps.runs import execution_input
from stepwise.store import ConversationStore

RUN_ID_PLACEHOLDER = "<run_id>"
_TERMINAL_STATUSES = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}


def comparable(value: Any, run_id: str) -> Any:
    """`value` without what differs by construction between two runs of the same question.

    At any depth: a string equal to `run_id` becomes a placeholder, the `Cause` of a caught
    error (`{"Error", "Cause"}`) keeps only what `cause_summary` keeps, and the run context's deadline
    and expiry (taken from the clock when each run was created) become placeholders.
    """
    if isinstance(value, str):
        return RUN_ID_PLACEHOLDER if value == run_id else value
    if isinstance(value, list):
        return [comparable(item, run_id) for item in value]
    if isinstance(value, dict):
        if set(value) == {"Error", "Cause"} and isinstance(value["Cause"], str):
            return {"Error": value["Error"], "Cause": cause_summary(value["Cause"])}
        if {"deadline", "expires_at", "profile"} <= set(value):
            value = value | {"deadline": "<deadline>", "expires_at": "<expires_at>"}
        return {key: comparable(item, run_id) for key, item in value.items()}
    return value


def cause_summary(cause: str | None) -> Any:
    """A Lambda error cause without what changes from call to call (stack trace, request id)."""
    if cause is None:
        return None
    try:
        document = json.loads(cause)
    except ValueError:
        return cause
    if isinstance(document, dict) and "errorType" in document:
        return {"errorType": document["errorType"], "errorMessage": document.get("errorMessage")}
    return document


@dataclass(frozen=True)
class StoredOutcome:
    """What the run left in the conversation store: its META fields and its messages, in order."""

    status: str
    stop_reason: str | None
    answer: str | None
    iteration: int
    error: tuple[str, str] | None
    llm_calls: int
    tool_calls: int
    messages: list[tuple[str, str, str | None]]

    @classmethod
    def read(cls, store: ConversationStore, run_id: str) -> StoredOutcome:
        """Read the run `run_id` back from the store."""
        meta: RunMeta = store.require_run(run_id)
        return cls(
            status=meta.status,
            stop_reason=meta.stop_reason,
            answer=meta.answer,
            iteration=meta.iteration,
            error=(meta.error.type, meta.error.message) if meta.error else None,
            llm_calls=meta.usage.llm_calls,
            tool_calls=meta.usage.tool_calls,
            messages=[(message.role, message.content, message.tool_call_id) for message in store.list_messages(run_id)],
        )


@dataclass(frozen=True)
class EngineRun:
    """An execution, comparable across engines.

    `states_entered` lists every state entered in order, Map items included; `states_exited` pairs
    each exited state with its output, sorted, because the order in which parallel Map items finish
    is not defined on either engine.
    """

    status: str
    states_entered: list[str]
    states_exited: list[tuple[str, str]]
    output: Any
    error: str | None
    cause: Any
    stored: StoredOutcome

    @classmethod
    def from_local(cls, result: ExecutionResult, stored: StoredOutcome) -> EngineRun:
        """The local engine's `ExecutionResult` of the run `result.name`."""
        run_id = result.name
        exited = [
            (event.state, json.dumps(comparable(event.output, run_id), sort_keys=True))
            for event in result.history
            if event.type == "exited"
        ]
        return cls(
            status=result.status,
            states_entered=[event.state for event in result.history if event.type == "entered"],
            states_exited=sorted(exited),
            output=comparable(result.output, run_id),
            error=result.error,
            cause=cause_summary(result.cause),
            stored=stored,
        )

    @classmethod
    def from_moto(
        cls, run_id: str, description: dict[str, Any], history: list[dict[str, Any]], stored: StoredOutcome
    ) -> EngineRun:
        """moto's `DescribeExecution` answer and execution history of the run `run_id`."""
        entered = [event["stateEnteredEventDetails"] for event in history if "stateEnteredEventDetails" in event]
        exited = [event["stateExitedEventDetails"] for event in history if "stateExitedEventDetails" in event]
        outputs = [
            (details["name"], json.dumps(comparable(json.loads(details["output"]), run_id), sort_keys=True))
            for details in exited
        ]
        output = description.get("output")
        return cls(
            status=description["status"],
            states_entered=[details["name"] for details in entered],
            states_exited=sorted(outputs),
            output=comparable(json.loads(output), run_id) if output is not None else None,
            error=description.get("error"),
            cause=cause_summary(description.get("cause")),
            stored=stored,
        )


class MotoStateMachine:
    """A state machine created in moto's Step Functions (with `execute_state_machine` on), run to its end."""

    def __init__(
        self,
        client: Any,
        definition: dict[str, Any],
        *,
        role_arn: str,
        name: str,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval_seconds: float = 0.02,
        max_polls: int = 3000,
    ) -> None:
        self._client = client
        self._sleep = sleep
        self._poll_interval = poll_interval_seconds
        self._max_polls = max_polls
        created = client.create_state_machine(name=name, definition=json.dumps(definition), roleArn=role_arn)
        self.arn: str = created["stateMachineArn"]

    def execute(self, name: str, execution_input: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Start an execution called `name` and wait for it to end; returns its description and history."""
        started = self._client.start_execution(stateMachineArn=self.arn, name=name, input=json.dumps(execution_input))
        execution_arn = started["executionArn"]
        for _ in range(self._max_polls):
            description: dict[str, Any] = self._client.describe_execution(executionArn=execution_arn)
            if description["status"] in _TERMINAL_STATUSES:
                return description, self._history(execution_arn)
            self._sleep(self._poll_interval)
        raise AssertionError(f"moto's execution {name} did not end after {self._max_polls} polls")

    def _history(self, execution_arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {"executionArn": execution_arn}
        while True:
            page = self._client.get_execution_history(**arguments)
            events.extend(page["events"])
            if not page.get("nextToken"):
                return events
            arguments["nextToken"] = page["nextToken"]


class EnginePair:
    """The same template, handlers, config and conversation store behind both engines.

    Each `run_*` creates its own run of the question in the store, executes it on one engine, and
    returns the execution and what it stored, as an `EngineRun`.
    """

    def __init__(self, environment: LocalEnvironment, moto_machine: MotoStateMachine) -> None:
        self.environment = environment
        self.moto_machine = moto_machine

    def run_local(self, question: str, **options: Any) -> EngineRun:
        """Run `question` through the local engine."""
        meta = self.environment.create_run(question, **options)
        result = self.environment.execute(meta.run_id)
        return EngineRun.from_local(result, StoredOutcome.read(self.environment.runtime.store, meta.run_id))

    def run_moto(self, question: str, **options: Any) -> EngineRun:
        """Run `question` through moto's Step Functions interpreter."""
        meta = self.environment.create_run(question, **options)
        description, history = self.moto_machine.execute(meta.run_id, execution_input(meta.run_id))
        stored = StoredOutcome.read(self.environment.runtime.store, meta.run_id)
        return EngineRun.from_moto(meta.run_id, description, history, stored)

    def run_both(
        self, question: str, *, before_each: Callable[[], None] | None = None, **options: Any
    ) -> tuple[EngineRun, EngineRun]:
        """Run `question` on the local engine, then on moto; `before_each` resets fakes before each run."""
        runs = []
        for run in (self.run_local, self.run_moto):
            if before_each is not None:
                before_each()
            runs.append(run(question, **options))
        return runs[0], runs[1]
