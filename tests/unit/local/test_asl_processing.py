"""Input/output processing, the context object, history and execution inputs of the local engine."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from stepwise.local.asl import InvalidExecutionInput, LocalStateMachine, StateEvent

from .support import START, FakeClock, ScriptedInvoker, load_asl


@pytest.fixture
def double_invoker() -> ScriptedInvoker:
    return ScriptedInvoker({"double": lambda payload: {"value": payload["n"] * 2}})


@pytest.fixture
def io_machine(double_invoker: ScriptedInvoker) -> LocalStateMachine:
    return LocalStateMachine(load_asl("io_processing.asl.json"), double_invoker, name="pipeline", clock=FakeClock())


def test_task_payload_is_built_from_the_input_path_then_parameters(
    io_machine: LocalStateMachine, double_invoker: ScriptedInvoker
) -> None:
    # Given an input whose request part is selected by InputPath
    execution_input = {"request": {"n": 21}, "other": "kept"}

    # When the execution runs
    io_machine.start_execution("run-1", execution_input)

    # Then the payload was rendered from the selected part, with context values
    assert double_invoker.payloads("double") == [
        {
            "n": 21,
            "state": "Work",
            "execution": "arn:aws:states:us-east-1:000000000000:execution:pipeline:run-1",
        }
    ]


def test_task_result_goes_through_result_selector_result_path_then_output_path(
    io_machine: LocalStateMachine,
) -> None:
    # Given a Task whose ResultPath merges into the input and whose OutputPath selects part of it
    execution_input = {"request": {"n": 21}, "other": "kept"}

    # When the execution runs
    result = io_machine.start_execution("run-1", execution_input)

    # Then the selected result was merged into the raw input, and OutputPath dropped "other"
    assert result.status == "SUCCEEDED"
    assert result.output["n"] == 21
    assert result.output["result"] == {"value": 42, "status": 200}
    assert "other" not in result.output


def test_result_path_null_keeps_the_input_and_input_path_null_gives_an_empty_object(
    io_machine: LocalStateMachine,
) -> None:
    # Given a Pass with ResultPath null, then a Pass with InputPath null whose Parameters show its input
    execution_input = {"request": {"n": 1}}

    # When the execution runs
    result = io_machine.start_execution("run-1", execution_input)

    # Then the ignored Result is nowhere, and the probe saw {}
    assert "ignored" not in result.output
    assert result.output["probe"] == {"seen": "{}"}


def test_listener_receives_every_event_in_history_order() -> None:
    # Given a listener collecting events
    received: list[StateEvent] = []
    machine = LocalStateMachine(
        load_asl("io_processing.asl.json"),
        ScriptedInvoker({"double": lambda payload: {"value": 0}}),
        listener=received.append,
        clock=FakeClock(),
    )

    # When an execution runs
    result = machine.start_execution("run-1", {"request": {"n": 0}})

    # Then the listener saw exactly the history, entering and leaving each state in turn
    assert received == result.history
    assert received[1].input == {"request": {"n": 0}}
    assert received[1].output == {"n": 0, "result": {"value": 0, "status": 200}}
    assert [(event.type, event.state) for event in received] == [
        ("entered", "Work"),
        ("exited", "Work"),
        ("entered", "KeepInput"),
        ("exited", "KeepInput"),
        ("entered", "Probe"),
        ("exited", "Probe"),
    ]


def test_context_object_names_the_execution_state_machine_and_start_time() -> None:
    # Given a Pass that copies the context object into its output
    definition = {
        "StartAt": "Look",
        "States": {"Look": {"Type": "Pass", "Parameters": {"context.$": "$$"}, "End": True}},
    }
    machine = LocalStateMachine(definition, ScriptedInvoker({}), name="agent", clock=FakeClock())

    # When an execution runs
    context = machine.start_execution("run-7", {"question": "q"}).output["context"]

    # Then it carries the Step Functions context fields
    assert context["Execution"] == {
        "Id": "arn:aws:states:us-east-1:000000000000:execution:agent:run-7",
        "Name": "run-7",
        "Input": {"question": "q"},
        "StartTime": "2024-05-01T12:00:00.000Z",
    }
    assert context["StateMachine"] == {
        "Id": "arn:aws:states:us-east-1:000000000000:stateMachine:agent",
        "Name": "agent",
    }
    assert context["State"] == {"Name": "Look", "EnteredTime": "2024-05-01T12:00:00.000Z", "RetryCount": 0}


def test_pass_result_replaces_only_the_result_path() -> None:
    # Given a Pass with a literal Result placed under $.config.limits
    definition = {
        "StartAt": "Set",
        "States": {"Set": {"Type": "Pass", "Result": {"max": 3}, "ResultPath": "$.config.limits", "End": True}},
    }
    machine = LocalStateMachine(definition, ScriptedInvoker({}))

    # When it runs on an input that already has a config object
    result = machine.start_execution("run-1", {"config": {"model": "m"}, "q": 1})

    # Then the result is merged, creating nothing else and keeping the rest
    assert result.output == {"config": {"model": "m", "limits": {"max": 3}}, "q": 1}


def test_missing_parameter_path_is_a_runtime_error_that_catch_all_does_not_catch() -> None:
    # Given a Task whose Parameters reference a missing field, with a Catch on States.ALL
    definition = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "f", "Payload": {"x.$": "$.missing"}},
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        },
    }
    invoker = ScriptedInvoker({"f": lambda payload: payload})
    machine = LocalStateMachine(definition, invoker)

    # When it runs
    result = machine.start_execution("run-1", {})

    # Then the execution fails with States.Runtime and the function was never called
    assert result.status == "FAILED"
    assert result.error == "States.Runtime"
    assert "$.missing" in (result.cause or "")
    assert invoker.calls == []


def test_state_output_over_256_kib_fails_with_data_limit_exceeded() -> None:
    # Given a Pass that doubles a large input
    definition = {
        "StartAt": "Grow",
        "States": {"Grow": {"Type": "Pass", "Parameters": {"a.$": "$.blob", "b.$": "$.blob"}, "End": True}},
    }
    machine = LocalStateMachine(definition, ScriptedInvoker({}))

    # When the input is 150 KB
    result = machine.start_execution("run-1", {"blob": "x" * 150_000})

    # Then the state's output is refused as on Step Functions
    assert result.status == "FAILED"
    assert result.error == "States.DataLimitExceeded"


@pytest.mark.parametrize("name", ["", "has space", "a/b", "x" * 81, "semi;colon"])
def test_invalid_execution_names_are_refused(name: str) -> None:
    # Given a valid machine
    machine = LocalStateMachine(load_asl("choice.asl.json"), ScriptedInvoker({}))

    # When / Then an execution name Step Functions would refuse is refused
    with pytest.raises(InvalidExecutionInput):
        machine.start_execution(name, {})


def test_a_payload_grown_after_a_choice_passed_it_on_is_still_measured() -> None:
    # Given a Choice that passes its input on as it is (not measured again), then a Pass that doubles it
    definition = {
        "StartAt": "Route",
        "States": {
            "Route": {"Type": "Choice", "Choices": [{"Variable": "$.blob", "IsPresent": True, "Next": "Grow"}]},
            "Grow": {"Type": "Pass", "Parameters": {"a.$": "$.blob", "b.$": "$.blob"}, "End": True},
        },
    }
    machine = LocalStateMachine(definition, ScriptedInvoker({}))

    # When the input is 150 KB
    result = machine.start_execution("run-1", {"blob": "x" * 150_000})

    # Then the Pass's output is refused
    assert (result.status, result.error) == ("FAILED", "States.DataLimitExceeded")


def test_input_that_is_not_json_is_refused() -> None:
    # Given a valid machine
    machine = LocalStateMachine(load_asl("choice.asl.json"), ScriptedInvoker({}))

    # When / Then an input that cannot be JSON is refused before anything runs
    with pytest.raises(InvalidExecutionInput, match="not JSON"):
        machine.start_execution("run-1", {"when": START})


def test_concurrent_executions_of_one_machine_keep_their_own_data_and_history() -> None:
    # Given a handler that only returns once two executions are inside it at the same time
    both_inside = threading.Barrier(2, timeout=10)

    def double(payload: dict[str, Any]) -> dict[str, Any]:
        both_inside.wait()
        return {"value": payload["n"] * 2}

    machine = LocalStateMachine(load_asl("io_processing.asl.json"), ScriptedInvoker({"double": double}))
    results: dict[str, Any] = {}

    def run(name: str, n: int) -> None:
        results[name] = machine.start_execution(name, {"request": {"n": n}})

    # When two executions run on two threads
    threads = [threading.Thread(target=run, args=(f"run-{n}", n)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)

    # Then each has its own output and a history of its own six events
    assert results["run-1"].output["result"]["value"] == 2
    assert results["run-2"].output["result"]["value"] == 4
    assert len(results["run-1"].history) == len(results["run-2"].history) == 6
    assert results["run-1"].history[0].input == {"request": {"n": 1}}
