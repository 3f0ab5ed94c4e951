"""Load-time validation: what the engine cannot run is refused when the machine is built."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from stepwise.local.asl import AslDefinitionError, AslUnsupportedError, LocalStateMachine

from .support import ScriptedInvoker, load_asl

LAMBDA = "arn:aws:states:::lambda:invoke"


def _base() -> dict[str, Any]:
    """A small valid machine that the cases below break in one place each."""
    return {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": LAMBDA,
                "Parameters": {"FunctionName": "f", "Payload.$": "$"},
                "Next": "Fan",
            },
            "Fan": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "End": True}}},
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }


def _set(path: list[str], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(definition: dict[str, Any]) -> None:
        node = definition
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


CASES = [
    ("unknown state type", _set(["States", "Done"], {"Type": "Finish"}), AslDefinitionError, "Done", "Finish"),
    (
        "parallel",
        _set(["States", "Done"], {"Type": "Parallel", "Branches": [], "End": True}),
        AslUnsupportedError,
        "Done",
        "Parallel",
    ),
    ("jsonata machine", _set(["QueryLanguage"], "JSONata"), AslUnsupportedError, None, "JSONata"),
    ("jsonata state", _set(["States", "Done", "QueryLanguage"], "JSONata"), AslUnsupportedError, "Done", "JSONata"),
    (
        "unknown intrinsic",
        _set(["States", "Call", "Parameters", "Payload.$"], "States.Frobnicate($)"),
        AslUnsupportedError,
        "Call",
        "States.Frobnicate",
    ),
    (
        "intrinsic arity",
        _set(["States", "Call", "Parameters", "Payload.$"], "States.ArrayLength($.a, $.b)"),
        AslDefinitionError,
        "Call",
        "takes 1 arguments",
    ),
    ("unknown field", _set(["States", "Call", "Nxet"], "Done"), AslDefinitionError, "Call", "unknown field 'Nxet'"),
    (
        "unimplemented field",
        _set(["States", "Call", "Credentials"], {"RoleArn": "arn:aws:iam::000000000000:role/x"}),
        AslUnsupportedError,
        "Call",
        "Credentials",
    ),
    ("next to a missing state", _set(["States", "Call", "Next"], "Nowhere"), AslDefinitionError, "Call", "Nowhere"),
    (
        "unsupported resource",
        _set(["States", "Call", "Resource"], "arn:aws:states:::dynamodb:putItem"),
        AslUnsupportedError,
        "Call",
        "dynamodb:putItem",
    ),
    (
        "callback pattern that passes no token",
        _set(["States", "Call", "Resource"], LAMBDA + ".waitForTaskToken"),
        AslDefinitionError,
        "Call",
        "$$.Task.Token",
    ),
    (
        "function name missing",
        _set(["States", "Call", "Parameters"], {"Payload.$": "$"}),
        AslDefinitionError,
        "Call",
        "FunctionName",
    ),
    ("unreachable state", _set(["States", "Orphan"], {"Type": "Succeed"}), AslDefinitionError, "Orphan", "reachable"),
    ("start at missing", _set(["StartAt"], "Begin"), AslDefinitionError, None, "Begin"),
    ("next and end", _set(["States", "Call", "End"], True), AslDefinitionError, "Call", "exactly one of 'Next'"),
    (
        "states.all not last",
        _set(
            ["States", "Call", "Retry"],
            [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["ValueError"]}],
        ),
        AslDefinitionError,
        "Call",
        "States.ALL",
    ),
    ("bad path", _set(["States", "Call", "InputPath"], "$.a["), AslDefinitionError, "Call", "InputPath"),
    ("filter path", _set(["States", "Call", "OutputPath"], "$.a[?(@.b)]"), AslUnsupportedError, "Call", "filter"),
    (
        "result path not a reference",
        _set(["States", "Call", "ResultPath"], "$.a[*]"),
        AslDefinitionError,
        "Call",
        "ResultPath",
    ),
    (
        "choice operator typo",
        _set(
            ["States", "Done"],
            {"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEqual": "x", "Next": "Call"}]},
        ),
        AslDefinitionError,
        "Done",
        "StringEqual",
    ),
    (
        "choice operand type",
        _set(
            ["States", "Done"],
            {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "1", "Next": "Call"}]},
        ),
        AslDefinitionError,
        "Done",
        "numeric",
    ),
    (
        "distributed map",
        _set(["States", "Fan", "ItemProcessor", "ProcessorConfig"], {"Mode": "DISTRIBUTED"}),
        AslUnsupportedError,
        "Fan",
        "DISTRIBUTED",
    ),
    (
        "state inside a map",
        _set(["States", "Fan", "ItemProcessor", "States", "Inner", "Type"], "Nope"),
        AslDefinitionError,
        "Fan/Inner",
        "Nope",
    ),
    (
        "fail with error and error path",
        _set(["States", "Done"], {"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}),
        AslDefinitionError,
        "Done",
        "ErrorPath",
    ),
    ("wrong type", _set(["States", "Call", "TimeoutSeconds"], "30"), AslDefinitionError, "Call", "TimeoutSeconds"),
]


@pytest.mark.parametrize(
    ("change", "error_type", "state", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_definition_problems_are_refused_at_construction(
    change: Callable[[dict[str, Any]], None], error_type: type[Exception], state: str | None, reason: str
) -> None:
    # Given a valid definition broken in one place
    definition = copy.deepcopy(_base())
    change(definition)

    # When / Then building the machine raises, naming the state and the reason
    with pytest.raises(error_type) as raised:
        LocalStateMachine(definition, ScriptedInvoker({}))
    assert isinstance(raised.value, AslDefinitionError)
    assert raised.value.state == state
    assert reason in str(raised.value)


def test_the_unbroken_base_definition_loads() -> None:
    # Given the base definition used by the cases above
    # When / Then it loads, so each case fails for its own change only
    LocalStateMachine(_base(), ScriptedInvoker({}))


def test_definition_given_as_json_text_loads() -> None:
    # Given a fixture as JSON text
    text = json.dumps(load_asl("choice.asl.json"))

    # When it is loaded
    machine = LocalStateMachine(text, ScriptedInvoker({}))

    # Then it is the same machine as the parsed object gives
    assert machine.definition.states.start_at == "Route"


def test_text_that_is_not_json_is_a_definition_error() -> None:
    # Given / When / Then a definition that is not JSON is refused
    with pytest.raises(AslDefinitionError, match="not JSON"):
        LocalStateMachine("{not json", ScriptedInvoker({}))
