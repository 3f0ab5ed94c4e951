"""Choice states: comparison operators, And / Or / Not, Default and States.NoChoiceMatched."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.local.asl import LocalStateMachine

from .support import ScriptedInvoker, load_asl


@pytest.fixture
def router() -> LocalStateMachine:
    return LocalStateMachine(load_asl("choice.asl.json"), ScriptedInvoker({}))


@pytest.mark.parametrize(
    ("execution_input", "route"),
    [
        ({"kind": "tool", "count": 2, "limit": 5}, "tool"),
        ({"kind": "tool", "count": 3, "limit": 5}, "fallback"),
        ({"kind": "final_answer", "count": 9, "limit": 5}, "answer"),
        ({"kind": "tool", "count": 9, "limit": 5, "answer": None}, "answer"),
        ({"kind": "other", "count": 9, "limit": 5}, "limit"),
        ({"kind": "other", "count": 1, "limit": 5}, "fallback"),
    ],
)
def test_choice_takes_the_first_matching_rule_or_the_default(
    router: LocalStateMachine, execution_input: dict[str, Any], route: str
) -> None:
    # Given the router machine (And/Not, Or/IsPresent/StringMatches, NumericGreaterThanPath, Default)
    # When an execution runs on the input
    result = router.start_execution("run-1", execution_input)

    # Then it went to the expected branch
    assert result.output["route"] == route


def _single_rule_machine(rule: dict[str, Any]) -> LocalStateMachine:
    definition = {
        "StartAt": "Check",
        "States": {
            "Check": {"Type": "Choice", "Choices": [{**rule, "Next": "Yes"}], "Default": "No"},
            "Yes": {"Type": "Pass", "Result": True, "End": True},
            "No": {"Type": "Pass", "Result": False, "End": True},
        },
    }
    return LocalStateMachine(definition, ScriptedInvoker({}))


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ({"StringEquals": "a"}, "a", True),
        ({"StringLessThan": "b"}, "a", True),
        ({"StringGreaterThanEquals": "b"}, "a", False),
        ({"StringEquals": "1"}, 1, False),
        ({"NumericEquals": 1}, 1.0, True),
        ({"NumericLessThanEquals": 2}, 3, False),
        ({"NumericEquals": 1}, True, False),
        ({"BooleanEquals": True}, True, True),
        ({"BooleanEquals": False}, 0, False),
        ({"TimestampLessThan": "2024-01-02T00:00:00Z"}, "2024-01-01T23:59:59+00:00", True),
        ({"TimestampEquals": "2024-01-01T00:00:00Z"}, "not a time", False),
        ({"StringMatches": "log-*.txt"}, "log-2024.txt", True),
        ({"StringMatches": "a\\*b"}, "a*b", True),
        ({"StringMatches": "a\\*b"}, "axb", False),
        ({"IsNull": True}, None, True),
        ({"IsString": True}, "s", True),
        ({"IsNumeric": True}, True, False),
        ({"IsBoolean": False}, "true", True),
        ({"IsTimestamp": True}, "2024-01-01T00:00:00Z", True),
    ],
)
def test_comparison_operators(rule: dict[str, Any], value: Any, expected: bool) -> None:
    # Given a Choice with one rule on $.value
    machine = _single_rule_machine({"Variable": "$.value", **rule})

    # When it runs on the value
    result = machine.start_execution("run-1", {"value": value})

    # Then the rule matched or not as Step Functions decides
    assert result.output is expected


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"StringEqualsPath": "$.other"}, True),
        ({"NumericLessThanPath": "$.other"}, False),
        ({"TimestampGreaterThanEqualsPath": "$.other"}, False),
        ({"BooleanEqualsPath": "$.other"}, False),
    ],
)
def test_path_variants_compare_with_another_field(rule: dict[str, Any], expected: bool) -> None:
    # Given a rule comparing $.value with $.other
    machine = _single_rule_machine({"Variable": "$.value", **rule})

    # When both hold the same string
    result = machine.start_execution("run-1", {"value": "same", "other": "same"})

    # Then only the string comparison holds
    assert result.output is expected


def test_is_present_false_matches_a_missing_field() -> None:
    # Given a rule that the field is absent
    machine = _single_rule_machine({"Variable": "$.answer", "IsPresent": False})

    # When the input has no such field
    result = machine.start_execution("run-1", {})

    # Then the rule holds
    assert result.output is True


def test_missing_variable_is_a_runtime_error() -> None:
    # Given a rule on a field that is not there
    machine = _single_rule_machine({"Variable": "$.absent", "StringEquals": "x"})

    # When it runs
    result = machine.start_execution("run-1", {})

    # Then the execution fails with States.Runtime
    assert result.status == "FAILED"
    assert result.error == "States.Runtime"


def test_no_match_and_no_default_fails_with_no_choice_matched() -> None:
    # Given a Choice without Default
    definition = {
        "StartAt": "Check",
        "States": {
            "Check": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericEquals": 1, "Next": "Yes"}]},
            "Yes": {"Type": "Succeed"},
        },
    }
    machine = LocalStateMachine(definition, ScriptedInvoker({}))

    # When no rule matches
    result = machine.start_execution("run-1", {"n": 2})

    # Then the execution fails with States.NoChoiceMatched
    assert result.status == "FAILED"
    assert result.error == "States.NoChoiceMatched"
