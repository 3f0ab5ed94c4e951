"""Retry, Catch, Fail, Wait and timeouts in the local engine."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from stepwise.errors import LLMTransientError
from stepwise.local.asl import LocalStateMachine, TaskError

from .support import FakeClock, RecordingSleep, ScriptedInvoker, load_asl


class FailsThenAnswers:
    """A function that raises `error` for its first `failures` calls, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        return {"ok": True, "retry_count": payload["retry_count"]}


def _retry_machine(
    function: Any, sleep: RecordingSleep, scale: float = 1.0
) -> tuple[LocalStateMachine, ScriptedInvoker]:
    invoker = ScriptedInvoker({"flaky": function})
    machine = LocalStateMachine(
        load_asl("retry_catch.asl.json"), invoker, sleep=sleep, retry_interval_scale=scale, clock=FakeClock()
    )
    return machine, invoker


def test_retries_wait_interval_times_backoff_rate_and_succeed() -> None:
    # Given a function that fails twice with LLMTransientError (IntervalSeconds 2, BackoffRate 3)
    sleep = RecordingSleep()
    machine, invoker = _retry_machine(FailsThenAnswers(2, LLMTransientError("429")), sleep)

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then it waited 2 s then 6 s, tried three times, and saw RetryCount 0, 1, 2
    assert result.status == "SUCCEEDED"
    assert sleep.calls == [2.0, 6.0]
    assert [payload["retry_count"] for payload in invoker.payloads("flaky")] == [0, 1, 2]
    assert result.output["call"] == {"answer": {"ok": True, "retry_count": 2}}


def test_retries_stop_after_max_attempts_with_delay_capped_by_max_delay_seconds() -> None:
    # Given a function that always fails with LLMTransientError (MaxAttempts 3, MaxDelaySeconds 10)
    sleep = RecordingSleep()
    machine, invoker = _retry_machine(FailsThenAnswers(99, LLMTransientError("429")), sleep)

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then it made 1 + 3 attempts, the third wait capped at 10 s instead of 18 s
    assert len(invoker.calls) == 4
    assert sleep.calls == [2.0, 6.0, 10.0]
    assert [event.type for event in result.history if event.state == "Call"] == [
        "entered", "retry", "retry", "retry", "caught", "exited",
    ]  # fmt: skip


def test_retry_interval_scale_shortens_every_wait() -> None:
    # Given a scale of 0.5
    sleep = RecordingSleep()
    machine, _ = _retry_machine(FailsThenAnswers(2, LLMTransientError("429")), sleep, scale=0.5)

    # When the execution runs
    machine.start_execution("run-1", {})

    # Then each wait was halved
    assert sleep.calls == [1.0, 3.0]


def test_full_jitter_waits_at_most_the_computed_interval() -> None:
    # Given a retrier with FULL jitter and a seeded random source
    definition = load_asl("retry_catch.asl.json")
    definition["States"]["Call"]["Retry"][0]["JitterStrategy"] = "FULL"
    sleep = RecordingSleep()
    machine = LocalStateMachine(
        definition,
        ScriptedInvoker({"flaky": FailsThenAnswers(3, LLMTransientError("429"))}),
        sleep=sleep,
        rng=random.Random(7),
    )

    # When it retries three times
    machine.start_execution("run-1", {})

    # Then each wait is between 0 and the un-jittered delay
    assert len(sleep.calls) == 3
    assert all(0 <= waited <= limit for waited, limit in zip(sleep.calls, [2, 6, 10], strict=True))


def test_retrier_with_max_attempts_zero_never_retries_and_catch_takes_over() -> None:
    # Given a ValueError, matched only by the States.ALL retrier with MaxAttempts 0
    sleep = RecordingSleep()
    machine, invoker = _retry_machine(FailsThenAnswers(1, ValueError("bad input")), sleep)

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then there was one attempt, no wait, and the Fail state reported the caught error
    assert len(invoker.calls) == 1
    assert sleep.calls == []
    assert result.status == "FAILED"
    assert result.error == "ValueError"


def test_caught_error_reaches_fail_state_through_result_path_error_path_and_cause_path() -> None:
    # Given a function that always fails with LLMTransientError
    machine, _ = _retry_machine(FailsThenAnswers(99, LLMTransientError("model overloaded")), RecordingSleep())

    # When the execution runs
    result = machine.start_execution("run-1", {"question": "q"})

    # Then the Fail state took Error and Cause from $.failure, with Lambda's error shape as the cause
    assert result.status == "FAILED"
    assert result.error == "LLMTransientError"
    cause = json.loads(result.cause or "")
    assert cause["errorType"] == "LLMTransientError"
    assert cause["errorMessage"] == "model overloaded"
    assert isinstance(cause["stackTrace"], list) and cause["stackTrace"]
    caught = next(event for event in result.history if event.type == "caught")
    assert caught.error == "LLMTransientError"


def test_task_error_reports_its_explicit_name() -> None:
    # Given an invoker that reports a Lambda service error by name
    def unavailable(payload: Any) -> Any:
        raise TaskError("Lambda.ServiceException", "Lambda is unavailable")

    definition = load_asl("retry_catch.asl.json")
    definition["States"]["Call"]["Retry"][0]["ErrorEquals"] = ["Lambda.ServiceException"]
    sleep = RecordingSleep()
    machine = LocalStateMachine(definition, ScriptedInvoker({"flaky": unavailable}), sleep=sleep)

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then the error is retried under that name and ends with it
    assert len(sleep.calls) == 3
    assert (result.error, result.cause) == ("Lambda.ServiceException", "Lambda is unavailable")


def test_task_that_returns_after_its_timeout_fails_with_states_timeout() -> None:
    # Given a function that takes 6 s of the fake clock under a 5 s TimeoutSeconds
    clock = FakeClock()

    def slow(payload: Any) -> dict[str, Any]:
        clock.advance(6)
        return {"late": True}

    invoker = ScriptedInvoker({"slow": slow})
    machine = LocalStateMachine(load_asl("task_timeout.asl.json"), invoker, clock=clock, sleep=RecordingSleep())

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then States.TaskFailed did not retry it, and the Catch on States.Timeout took it
    assert len(invoker.calls) == 1
    assert result.status == "SUCCEEDED"
    assert result.output["timeout"]["Error"] == "States.Timeout"


def test_machine_timeout_ends_the_execution_as_timed_out() -> None:
    # Given a loop of a 1 s task and a 10 s wait under a 25 s machine TimeoutSeconds
    clock = FakeClock()
    thoughts = 0

    def think(payload: Any) -> dict[str, Any]:
        nonlocal thoughts
        thoughts += 1
        if thoughts > 10:
            raise RuntimeError("the machine timeout did not end the loop")
        clock.advance(1)
        return {}

    invoker = ScriptedInvoker({"think": think})
    machine = LocalStateMachine(load_asl("machine_timeout.asl.json"), invoker, clock=clock, sleep=RecordingSleep(clock))

    # When the execution runs
    result = machine.start_execution("run-1", {})

    # Then it stopped at 25 s, in the third wait, after three thinks (t=0, 11, 22)
    assert result.status == "TIMED_OUT"
    assert result.error == "States.Timeout"
    assert len(invoker.calls) == 3
    assert (result.stopped_at - result.started_at).total_seconds() == 25


@pytest.mark.parametrize(
    ("wait", "execution_input", "expected_sleep"),
    [
        ({"Seconds": 4}, {}, 4),
        ({"SecondsPath": "$.delay"}, {"delay": 7}, 7),
        ({"Timestamp": "2024-05-01T12:01:00Z"}, {}, 60),
        ({"TimestampPath": "$.until"}, {"until": "2024-05-01T12:00:30+00:00"}, 30),
    ],
)
def test_wait_sleeps_for_seconds_or_until_a_timestamp(
    wait: dict[str, Any], execution_input: dict[str, Any], expected_sleep: float
) -> None:
    # Given a Wait state and a clock at 12:00:00
    definition = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", **wait, "End": True}}}
    sleep = RecordingSleep()
    machine = LocalStateMachine(definition, ScriptedInvoker({}), sleep=sleep, clock=FakeClock())

    # When it runs
    result = machine.start_execution("run-1", execution_input)

    # Then it slept for the right time and passed its input through
    assert sleep.calls == [expected_sleep]
    assert result.output == execution_input


def test_fail_state_with_literal_error_and_cause() -> None:
    # Given a Fail state with Error and Cause
    definition = {"StartAt": "Stop", "States": {"Stop": {"Type": "Fail", "Error": "Custom.Stop", "Cause": "done"}}}
    machine = LocalStateMachine(definition, ScriptedInvoker({}))

    # When it runs
    result = machine.start_execution("run-1", {})

    # Then the execution fails with them, and the history ends with a failed event
    assert (result.status, result.error, result.cause) == ("FAILED", "Custom.Stop", "done")
    assert result.history[-1].type == "failed"
