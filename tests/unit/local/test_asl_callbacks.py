"""The callback pattern (`lambda:invoke.waitForTaskToken`) in the local engine, with AWS's semantics:
the token in `$$.Task.Token`, SendTaskSuccess/SendTaskFailure ending the task, TimeoutSeconds(Path)
and HeartbeatSeconds ending it as timed out, and a token that cannot be answered twice."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from stepwise.local.asl import AslDefinitionError, LocalStateMachine
from stepwise.local.asl.callbacks import TOKEN_PREFIX, CallbackError

from .support import START, ScriptedInvoker

_RETRY = [{"ErrorEquals": ["Lambda.ServiceException"], "MaxAttempts": 2}]


def _machine_definition(**task_fields: Any) -> dict[str, Any]:
    """Ask (a callback task whose result lands at $.answer; a timeout is caught into $.timed_out) -> Done."""
    ask = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": "ask", "Payload": {"token.$": "$$.Task.Token", "question.$": "$.question"}},
        "ResultPath": "$.answer",
        "Retry": _RETRY,
        "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timed_out", "Next": "Done"}],
        "Next": "Done",
    } | task_fields
    return {"StartAt": "Ask", "States": {"Ask": ask, "Done": {"Type": "Succeed"}}}


class TickingClock:
    """A clock that moves one second each time it is read, so waits end without real seconds passing."""

    def __init__(self) -> None:
        self.now = START
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.now += timedelta(seconds=1)
            return self.now


class Answerer:
    """The `ask` function: keeps the token and hands it to `answer` on another thread, as an approver would."""

    def __init__(self, answer: Any = None) -> None:
        self.tokens: list[str] = []
        self.answer = answer
        self.threads: list[threading.Thread] = []

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.tokens.append(payload["token"])
        if self.answer is not None:
            thread = threading.Thread(target=self.answer, args=(payload["token"],))
            thread.start()
            self.threads.append(thread)
        return {"ignored": "a callback task's result is its token's answer, not the function's return"}


def _run(machine: LocalStateMachine, document: dict[str, Any]) -> Any:
    return machine.start_execution("exec-1", document)


def test_send_task_success_output_is_the_task_result() -> None:
    # Given a callback task whose function's token is answered with an approval
    holder: dict[str, LocalStateMachine] = {}
    answerer = Answerer(lambda token: holder["machine"].task_tokens.succeed(token, {"approved": True}))
    machine = LocalStateMachine(_machine_definition(), ScriptedInvoker({"ask": answerer}))
    holder["machine"] = machine

    # When the execution runs
    result = _run(machine, {"question": "may I?"})

    # Then the function got a token from $$.Task.Token, and the answer (not its return value) is the result
    assert result.status == "SUCCEEDED"
    assert answerer.tokens[0].startswith(TOKEN_PREFIX)
    assert result.output == {"question": "may I?", "answer": {"approved": True}}


def test_send_task_failure_is_the_error_a_catch_sees() -> None:
    # Given a callback task answered with SendTaskFailure, and a Catch for that error
    holder: dict[str, LocalStateMachine] = {}
    answerer = Answerer(lambda token: holder["machine"].task_tokens.fail(token, "Denied", "not today"))
    definition = _machine_definition(
        Catch=[{"ErrorEquals": ["Denied"], "ResultPath": "$.denied", "Next": "Done"}], Retry=_RETRY
    )
    machine = LocalStateMachine(definition, ScriptedInvoker({"ask": answerer}))
    holder["machine"] = machine

    # When the execution runs
    result = _run(machine, {"question": "may I?"})

    # Then the Catch received the error name and the cause the answerer gave
    assert result.status == "SUCCEEDED"
    assert result.output["denied"] == {"Error": "Denied", "Cause": "not today"}


def test_an_unanswered_task_times_out_after_timeout_seconds_path() -> None:
    # Given a callback task whose TimeoutSecondsPath reads 5 from the input, and nobody answers
    definition = _machine_definition(TimeoutSecondsPath="$.wait_seconds")
    machine = LocalStateMachine(definition, ScriptedInvoker({"ask": Answerer()}), clock=TickingClock())

    # When the execution runs
    result = _run(machine, {"question": "may I?", "wait_seconds": 5})

    # Then the task failed with States.Timeout, which the Catch turned into a result
    assert result.status == "SUCCEEDED"
    assert result.output["timed_out"]["Error"] == "States.Timeout"


def test_a_task_without_heartbeats_fails_with_heartbeat_timeout_which_states_timeout_catches() -> None:
    # Given a callback task with HeartbeatSeconds 3 under TimeoutSeconds 100, never answered nor beaten
    definition = _machine_definition(TimeoutSeconds=100, HeartbeatSeconds=3)
    machine = LocalStateMachine(definition, ScriptedInvoker({"ask": Answerer()}), clock=TickingClock())

    # When the execution runs
    result = _run(machine, {"question": "may I?"})

    # Then it failed with States.HeartbeatTimeout, matched by the States.Timeout catcher
    assert result.output["timed_out"]["Error"] == "States.HeartbeatTimeout"


def test_heartbeats_keep_a_task_alive_past_its_heartbeat_seconds() -> None:
    # Given a callback task with HeartbeatSeconds 3, whose answerer beats several times before answering
    holder: dict[str, LocalStateMachine] = {}
    clock = TickingClock()

    def beat_then_answer(token: str) -> None:
        tokens = holder["machine"].task_tokens
        for _ in range(4):
            tokens.beat(token, clock())
        tokens.succeed(token, "done")

    definition = _machine_definition(TimeoutSeconds=100, HeartbeatSeconds=3)
    machine = LocalStateMachine(definition, ScriptedInvoker({"ask": Answerer(beat_then_answer)}), clock=clock)
    holder["machine"] = machine

    # When the execution runs
    result = _run(machine, {"question": "may I?"})

    # Then the task ended with its answer, not a heartbeat timeout
    assert result.output.get("answer") == "done"


def test_a_token_answered_once_cannot_be_answered_again() -> None:
    # Given an execution whose token was answered
    holder: dict[str, LocalStateMachine] = {}
    answerer = Answerer(lambda token: holder["machine"].task_tokens.succeed(token, {}))
    machine = LocalStateMachine(_machine_definition(), ScriptedInvoker({"ask": answerer}))
    holder["machine"] = machine
    _run(machine, {"question": "may I?"})

    # When the same token is answered again / Then the service's TaskTimedOut is the answer
    with pytest.raises(CallbackError) as second:
        machine.task_tokens.fail(answerer.tokens[0], "Denied", None)
    assert second.value.code == "TaskTimedOut"


def test_unknown_and_malformed_tokens_are_refused_as_the_service_refuses_them() -> None:
    # Given a machine that issued no token
    machine = LocalStateMachine(_machine_definition(), ScriptedInvoker({"ask": Answerer()}))
    tokens = machine.task_tokens

    # When a well-formed token it never issued, and a malformed one, are answered
    with pytest.raises(CallbackError) as unknown:
        tokens.succeed(TOKEN_PREFIX + "A" * 64, {})
    with pytest.raises(CallbackError) as malformed:
        tokens.succeed("not-a-token", {})

    # Then they are TaskDoesNotExist and InvalidToken
    assert (unknown.value.code, malformed.value.code) == ("TaskDoesNotExist", "InvalidToken")


def test_stopping_a_waiting_execution_aborts_it_and_ends_its_token() -> None:
    # Given an execution waiting for an answer that never comes
    answerer = Answerer()
    machine = LocalStateMachine(_machine_definition(), ScriptedInvoker({"ask": answerer}))
    stop = threading.Event()
    outcome: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(result=machine.start_execution("exec-1", {"question": "?"}, stop=stop))
    )
    runner.start()
    while machine.task_tokens.pending() == 0:
        threading.Event().wait(0.01)

    # When it is stopped
    stop.set()
    runner.join(timeout=10)

    # Then it ended ABORTED and its token can no longer be answered
    assert outcome["result"].status == "ABORTED"
    with pytest.raises(CallbackError) as late:
        machine.task_tokens.succeed(answerer.tokens[0], {})
    assert late.value.code == "TaskTimedOut"


def test_a_callback_task_that_passes_no_token_is_refused_at_load() -> None:
    # Given a .waitForTaskToken task whose Parameters never mention $$.Task.Token
    definition = _machine_definition(Parameters={"FunctionName": "ask", "Payload.$": "$"})

    # When / Then loading it is refused, as Step Functions refuses it: nobody could answer the task
    with pytest.raises(AslDefinitionError, match=r"\$\$\.Task\.Token"):
        LocalStateMachine(definition, ScriptedInvoker({}))


def test_heartbeat_seconds_on_a_request_response_task_is_refused() -> None:
    # Given a plain lambda:invoke task with HeartbeatSeconds
    definition = _machine_definition(
        Resource="arn:aws:states:::lambda:invoke", HeartbeatSeconds=5, Parameters={"FunctionName": "ask"}
    )

    # When / Then the engine refuses it by name rather than ignoring it
    with pytest.raises(AslDefinitionError, match="HeartbeatSeconds"):
        LocalStateMachine(definition, ScriptedInvoker({}))
