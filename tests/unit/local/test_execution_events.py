"""Execution status changes delivered locally to the functions whose EventBridge rule matches them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stepwise.local.asl import ExecutionResult
from stepwise.local.execution_events import ExecutionEndPublisher, execution_rules, matches
from stepwise.local.template import SamTemplate, TemplateError
from tests.conftest import PROJECT_ROOT

MACHINE_ARN = "arn:aws:states:us-east-1:000000000000:stateMachine:AgentStateMachine"


def ended(status: str) -> ExecutionResult:
    moment = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
    return ExecutionResult(
        execution_arn="arn:aws:states:us-east-1:000000000000:execution:AgentStateMachine:run1",
        name="run1",
        status=status,
        output=None,
        error="StoreTransientError" if status == "FAILED" else None,
        cause=None,
        started_at=moment,
        stopped_at=moment,
        history=[],
    )


def publisher_of_the_template(delivered: list[tuple[str, Any]]) -> ExecutionEndPublisher:
    rules = execution_rules(SamTemplate.load(PROJECT_ROOT / "template.yaml"), {"AgentStateMachine": MACHINE_ARN})
    return ExecutionEndPublisher(
        rules, lambda function, event: delivered.append((function, event)), state_machine_arn=MACHINE_ARN
    )


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_an_execution_that_ended_without_success_reaches_the_execution_ended_function(status: str) -> None:
    # Given the template's rules, and an execution that ended `status`
    delivered: list[tuple[str, Any]] = []
    # When its end is published
    publisher_of_the_template(delivered)(ended(status), '{"run_id": "run1"}')
    # Then the ExecutionEnded function got the status change, as EventBridge shapes it
    assert [function for function, _ in delivered] == ["ExecutionEndedFunction"]
    event = delivered[0][1]
    assert (event["source"], event["detail-type"]) == ("aws.states", "Step Functions Execution Status Change")
    detail = {key: event["detail"][key] for key in ("name", "status", "stateMachineArn")}
    assert detail == {"name": "run1", "status": status, "stateMachineArn": MACHINE_ARN}
    assert event["detail"]["input"] == '{"run_id": "run1"}'


def test_a_succeeded_execution_reaches_no_function() -> None:
    # Given the template's rules
    delivered: list[tuple[str, Any]] = []
    # When a succeeded execution's end is published
    publisher_of_the_template(delivered)(ended("SUCCEEDED"), "{}")
    # Then no rule matched it
    assert delivered == []


def test_a_failing_target_does_not_change_the_execution() -> None:
    # Given a target that fails
    rules = execution_rules(SamTemplate.load(PROJECT_ROOT / "template.yaml"), {"AgentStateMachine": MACHINE_ARN})

    attempted: list[str] = []

    def failing(function: str, event: Any) -> Any:
        attempted.append(function)
        raise RuntimeError("the store is down")

    publisher = ExecutionEndPublisher(rules, failing, state_machine_arn=MACHINE_ARN)
    # When an execution's end is published
    publisher(ended("FAILED"), "{}")
    # Then the target was invoked once and its failure was not raised to the execution
    assert attempted == ["ExecutionEndedFunction"]


def test_patterns_match_exact_values_at_any_depth() -> None:
    # Given a pattern on the source and a nested detail field
    pattern = {"source": ["aws.states"], "detail": {"status": ["FAILED", "ABORTED"]}}
    # Then an event matches when every field has one of the allowed values, and not otherwise
    assert matches(pattern, {"source": "aws.states", "detail": {"status": "ABORTED", "name": "x"}})
    assert not matches(pattern, {"source": "aws.states", "detail": {"status": "SUCCEEDED"}})
    assert not matches(pattern, {"source": "aws.states"})


def test_a_pattern_the_local_engine_cannot_match_exactly_is_refused_naming_its_function(tmp_path: Path) -> None:
    # Given a rule with a prefix pattern, which exact matching would get wrong
    template = tmp_path / "template.yaml"
    template.write_text(
        """
Resources:
  Watcher:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/
      Handler: app.handler
      Events:
        Ended:
          Type: EventBridgeRule
          Properties:
            Pattern:
              source: [aws.states]
              detail:
                name: [{prefix: run-}]
""",
        encoding="utf-8",
    )
    # When its rules are read / Then the error names the function and the field
    with pytest.raises(TemplateError, match=r"Watcher\.Events\.Ended\.Properties\.Pattern\.detail\.name"):
        execution_rules(SamTemplate.load(template), {})
