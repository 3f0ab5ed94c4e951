"""Pieces of the small state machines tests write inline for the local engine."""

from __future__ import annotations

from typing import Any


def lambda_task(function_name: str, **fields: Any) -> dict[str, Any]:
    """A Task state that invokes `function_name` with the state's whole input as its payload (`Payload.$: $`);
    `fields` add the state's own (ResultSelector, ResultPath, OutputPath, Next or End...)."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": function_name, "Payload.$": "$"},
        **fields,
    }
