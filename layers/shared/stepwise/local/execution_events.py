"""Execution status changes delivered locally as EventBridge delivers them on AWS.

Step Functions sends a "Step Functions Execution Status Change" event to EventBridge when a Standard
execution ends, and the template's `EventBridgeRule` events route the ones that match their pattern to a
function. Locally, the engine hands every ended execution to `ExecutionEndPublisher`, which builds the
same event and invokes each function whose rule matches it, once, after the execution ended; a failing
target is logged and does not change the execution's outcome, as on AWS.

Patterns are matched by exact values (a list of allowed values per field, objects nested as in the
event), the part of EventBridge's pattern language the template uses; a rule using more (prefix,
anything-but, numeric...) is refused when the environment starts, naming its function, rather than
matched wrongly.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepwise.local.asl import ExecutionResult
from stepwise.local.template import SamTemplate, TemplateError
from stepwise.telemetry.observability import logger

DETAIL_TYPE = "Step Functions Execution Status Change"
_RULE_TYPES = frozenset({"EventBridgeRule", "CloudWatchEvent"})


@dataclass(frozen=True)
class ExecutionRule:
    """One function's rule for Step Functions events: its pattern, references resolved."""

    function: str
    pattern: dict[str, Any]


def _resolved(value: Any, references: dict[str, str], where: str) -> Any:
    """The pattern with each `!Ref` to a known resource replaced by its ARN; any other intrinsic is refused."""
    if isinstance(value, dict):
        if len(value) == 1 and "Ref" in value and value["Ref"] in references:
            return references[value["Ref"]]
        if any(key == "Ref" or key.startswith("Fn::") for key in value):
            raise TemplateError(f"{where}: the local engine resolves only !Ref to {sorted(references)} in a pattern")
        return {key: _resolved(item, references, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, references, where) for item in value]
    return value


def _check_exact(pattern: Any, where: str) -> None:
    """Refuse what exact matching would get wrong: a field's allowed values must be a list of plain values."""
    if not isinstance(pattern, dict):
        raise TemplateError(f"{where}: a pattern field is an object or a list of values")
    for key, value in pattern.items():
        if isinstance(value, dict):
            _check_exact(value, f"{where}.{key}")
        elif not isinstance(value, list) or any(isinstance(item, dict | list) for item in value):
            raise TemplateError(f"{where}.{key}: the local engine matches lists of exact values only")


def execution_rules(template: SamTemplate, state_machine_arns: dict[str, str]) -> list[ExecutionRule]:
    """The functions' rules whose pattern selects Step Functions events (`source` aws.states)."""
    rules: list[ExecutionRule] = []
    for logical_id, resource in template.document["Resources"].items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event_name, event in ((resource.get("Properties") or {}).get("Events") or {}).items():
            if not isinstance(event, dict) or event.get("Type") not in _RULE_TYPES:
                continue
            where = f"{template.path}: {logical_id}.Events.{event_name}.Properties.Pattern"
            pattern = _resolved((event.get("Properties") or {}).get("Pattern"), state_machine_arns, where)
            _check_exact(pattern, where)
            if "aws.states" in pattern.get("source", []):
                rules.append(ExecutionRule(function=logical_id, pattern=pattern))
    return rules


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """EventBridge's exact matching: every field of the pattern is in the event with one of its values."""
    for key, allowed in pattern.items():
        value = event.get(key)
        if isinstance(allowed, dict):
            if not isinstance(value, dict) or not matches(allowed, value):
                return False
        elif value not in allowed:
            return False
    return True


def status_change_event(result: ExecutionResult, *, state_machine_arn: str, input_text: str) -> dict[str, Any]:
    """The event Step Functions sends to EventBridge for an execution that ended as `result` says."""
    # arn:aws:states:<region>:<account>:execution:<machine>:<name>
    region, account = result.execution_arn.split(":")[3:5]
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": DETAIL_TYPE,
        "source": "aws.states",
        "account": account,
        "time": result.stopped_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [result.execution_arn],
        "detail": {
            "executionArn": result.execution_arn,
            "stateMachineArn": state_machine_arn,
            "name": result.name,
            "status": result.status,
            "startDate": int(result.started_at.timestamp() * 1000),
            "stopDate": int(result.stopped_at.timestamp() * 1000),
            "input": input_text,
            "inputDetails": {"included": True},
            "output": None,
            "outputDetails": None,
            "error": result.error,
            "cause": result.cause,
        },
    }


class ExecutionEndPublisher:
    """Delivers each ended execution's status change to the functions whose rule matches it."""

    def __init__(
        self, rules: list[ExecutionRule], invoke: Callable[[str, Any], Any], *, state_machine_arn: str
    ) -> None:
        self._rules = rules
        self._invoke = invoke
        self._state_machine_arn = state_machine_arn

    def __call__(self, result: ExecutionResult, input_text: str) -> None:
        """Invoke the matching functions with the event; a target's failure is logged, as EventBridge keeps it."""
        event = status_change_event(result, state_machine_arn=self._state_machine_arn, input_text=input_text)
        for rule in self._rules:
            if not matches(rule.pattern, event):
                continue
            try:
                self._invoke(rule.function, event)
            except Exception as exc:  # a target's failure is its own, not the execution's
                logger.warning(
                    "an execution status change target failed",
                    extra={"function": rule.function, "execution": result.execution_arn, "error": str(exc)},
                )
