"""Intrinsic functions and JSONPath as the local engine evaluates them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stepwise.local.asl import LocalStateMachine

from .support import FakeClock, ScriptedInvoker, load_asl

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def computed() -> dict[str, Any]:
    machine = LocalStateMachine(load_asl("intrinsics.asl.json"), ScriptedInvoker({}), clock=FakeClock())
    execution_input = {
        "name": "Ada",
        "items": ["a", "b", "c"],
        "encoded": '{"k": [1, 2]}',
        "object": {"k": "v", "n": 1},
        "count": 10,
    }
    result = machine.start_execution("run-42", execution_input)
    assert result.status == "SUCCEEDED", result.cause
    output: dict[str, Any] = result.output
    return output


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("greeting", 'Hello, Ada! 3 items: ["a","b","c"]'),
        ("escaped", "braces {} and it's Ada"),
        ("parsed", {"k": [1, 2]}),
        ("encoded", '{"k":"v","n":1}'),
        ("array", ["Ada", 1, True, None, "x, y"]),
        ("second", "b"),
        ("sum", 7),
        ("nested", 3),
        ("execution_name", "run run-42"),
    ],
)
def test_intrinsic_functions_compute_their_values(computed: dict[str, Any], field: str, expected: Any) -> None:
    # Given the Pass state of intrinsics.asl.json, run once on a fixed input (fixture)
    # When / Then each field holds the function's value
    assert computed[field] == expected


def test_uuid_is_a_random_version_4_uuid(computed: dict[str, Any]) -> None:
    # Given / When the machine ran States.UUID()
    # Then the value is a version 4 UUID
    assert UUID4.fullmatch(computed["id"])


def _pass_with(parameters: dict[str, Any]) -> LocalStateMachine:
    definition = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": parameters, "End": True}}}
    return LocalStateMachine(definition, ScriptedInvoker({}))


@pytest.mark.parametrize(
    "expression",
    [
        "States.ArrayGetItem($.items, 5)",
        "States.StringToJson($.name)",
        "States.MathAdd($.name, 1)",
        "States.Format('{} {}', $.name)",
    ],
)
def test_bad_intrinsic_arguments_fail_with_intrinsic_failure(expression: str) -> None:
    # Given a Pass evaluating an intrinsic on arguments it cannot use
    machine = _pass_with({"value.$": expression})

    # When it runs
    result = machine.start_execution("run-1", {"name": "Ada", "items": [1]})

    # Then the execution fails with States.IntrinsicFailure
    assert result.error == "States.IntrinsicFailure"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$.store.books[0].title", "A"),
        ("$.store.books[-1].title", "C"),
        ("$['store']['books'][1]['title']", "B"),
        ("$.store.books[*].price", [5, 12, 8]),
        ("$.store.books[0:2].title", ["A", "B"]),
        ("$..price", [5, 12, 8, 99]),
        ("$.store.books[0,2].title", ["A", "C"]),
        ("$.store.bike.*", ["red", 99]),
        ("$['weird.key']", 1),
    ],
)
def test_jsonpath_selection_in_parameters(path: str, expected: Any) -> None:
    # Given a Pass selecting with a JSONPath
    machine = _pass_with({"value.$": path})
    document = {
        "store": {
            "books": [{"title": "A", "price": 5}, {"title": "B", "price": 12}, {"title": "C", "price": 8}],
            "bike": {"color": "red", "price": 99},
        },
        "weird.key": 1,
    }

    # When it runs
    result = machine.start_execution("run-1", document)

    # Then it selected what JSONPath selects
    assert result.output == {"value": expected}


def test_nested_templates_in_objects_and_arrays_are_rendered() -> None:
    # Given Parameters with `.$` keys inside a nested object and inside an array
    machine = _pass_with({"outer": {"inner.$": "$.a", "list": [{"x.$": "$.b"}, "plain"]}, "literal": "$.a"})

    # When it runs
    result = machine.start_execution("run-1", {"a": 1, "b": 2})

    # Then every `.$` key was resolved and literals were left alone
    assert result.output == {"outer": {"inner": 1, "list": [{"x": 2}, "plain"]}, "literal": "$.a"}
