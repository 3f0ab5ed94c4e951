"""Tracing on AWS is one template parameter: empty, nothing traces; the ADOT Python layer's ARN adds the
layer and its wrapper to the functions, turns on Lambda's and Step Functions' active tracing, and tells
the code to write the run's spans. The X-Ray SDK is gone from the layer."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT

ON = "TracesWithOpenTelemetry"


def when_on(value: Any, otherwise: Any) -> dict[str, Any]:
    return {"Fn::If": [ON, value, otherwise]}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml").document


def test_tracing_is_off_unless_the_adot_layer_is_named(template: dict[str, Any]) -> None:
    # Given the parameter and the condition it drives
    parameter = template["Parameters"]["OpenTelemetryLayerArn"]
    # Then it is empty by default, and the condition is "not empty"
    assert parameter["Default"] == ""
    assert template["Conditions"][ON] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "OpenTelemetryLayerArn"}, ""]}]}


def test_the_layer_its_wrapper_and_active_tracing_come_with_the_parameter(template: dict[str, Any]) -> None:
    # Given every function's globals and the state machine
    function = template["Globals"]["Function"]
    variables = function["Environment"]["Variables"]
    machine = template["Resources"]["AgentStateMachine"]["Properties"]
    # Then with the parameter set, the layer, ADOT's wrapper, active tracing and the run's spans are on
    assert when_on({"Ref": "OpenTelemetryLayerArn"}, {"Ref": "AWS::NoValue"}) in function["Layers"]
    assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == when_on("/opt/otel-instrument", {"Ref": "AWS::NoValue"})
    assert variables["STEPWISE_OTEL"] == when_on("true", "false")
    assert function["Tracing"] == when_on("Active", "PassThrough")
    assert machine["Tracing"]["Enabled"] == when_on(True, False)
    # And the X-Ray SDK's tracer settings are gone
    assert not [name for name in variables if name.startswith("POWERTOOLS_TRACE")]


def test_the_shared_layer_no_longer_brings_the_xray_sdk() -> None:
    # Given the layer's requirements
    requirements = (PROJECT_ROOT / "layers" / "shared" / "requirements.txt").read_text(encoding="utf-8")
    # Then Powertools comes without its tracer extra (aws-xray-sdk)
    assert "aws-lambda-powertools[tracer]" not in requirements and "aws-xray-sdk" not in requirements
