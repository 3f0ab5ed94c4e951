"""Who copies a Task's payload: the engine, unless its invoker says each handler gets a copy of its own."""

from __future__ import annotations

from typing import Any

from stepwise.local.asl import LocalStateMachine
from tests.support.asl_machines import lambda_task
from tests.unit.local.support import ScriptedInvoker

# The Task's payload is the execution's input itself ("Payload.$": "$"), and its result is kept beside it.
MACHINE = {
    "StartAt": "Work",
    "States": {
        "Work": lambda_task("work", ResultSelector={"done.$": "$.Payload.done"}, ResultPath="$.result", End=True)
    },
}


def _changes_its_payload(payload: dict[str, Any]) -> dict[str, Any]:
    payload["items"].append("added by the handler")
    return {"done": True}


def test_a_handler_that_changes_its_payload_does_not_change_the_execution_data() -> None:
    # Given an engine whose invoker passes the payload as it gets it, and a handler that changes it
    machine = LocalStateMachine(MACHINE, ScriptedInvoker({"work": _changes_its_payload}), name="copies")
    # When an execution runs
    result = machine.start_execution("run-1", {"items": ["given"]})
    # Then the execution's data is what the input said: the engine sent a copy
    assert result.output == {"items": ["given"], "result": {"done": True}}


def test_an_invoker_that_copies_gets_the_payload_whole() -> None:
    # Given an engine told that its invoker copies each payload (as Lambda's JSON does)
    invoker = ScriptedInvoker({"work": lambda payload: {"done": payload == {"items": ["given"]}}})
    machine = LocalStateMachine(MACHINE, invoker, name="copies", invoker_copies=True)
    # When an execution runs
    result = machine.start_execution("run-1", {"items": ["given"]})
    # Then the handler got the whole payload
    assert result.output == {"items": ["given"], "result": {"done": True}}
