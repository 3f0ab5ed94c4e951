"""The streamed routes are wired as docs/http-api.md says: API Gateway response streaming into StreamFunction,
which runs its ASGI app behind the AWS Lambda Web Adapter layer.

Read from template.yaml as it is, and as AWS SAM's own translator (the `aws-sam-translator` package that
`sam deploy` runs) turns it into the REST API's definition: what API Gateway is given is asserted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from stepwise.interop.a2a import paths as a2a
from stepwise.interop.mcp_server import MCP_ROUTES
from stepwise.local.template import SamTemplate
from stepwise.steps.api import ROUTES
from stepwise.steps.api.route_table import CONSOLE_ROUTES
from tests.conftest import PROJECT_ROOT

STREAMED = {("GET", "/v1/runs/{run_id}/events"), ("POST", "/v1/chat/completions"), *MCP_ROUTES}
# The protocol apps the stream function serves beside them (stepwise.interop): A2A's endpoints and cards
A2A_ROUTES = a2a.KEYED_ROUTES | a2a.PUBLIC_ROUTES
PROTOCOL_ROUTES = A2A_ROUTES
# The adapter's layers as AWS publishes them (docs of awslabs/aws-lambda-web-adapter, "Zip Packages")
ADAPTER_LAYER = re.compile(
    r"arn:\$\{AWS::Partition\}:lambda:\$\{AWS::Region\}:753240598075:layer:LambdaAdapterLayer(?P<arch>Arm64|X86):\d+"
)
ADAPTER_ARCH = {"Arm64": "arm64", "X86": "x86_64"}
STREAM_INVOCATION_URI = re.compile(
    r"arn:aws:apigateway:\$\{AWS::Region\}:lambda:path/2021-11-15/functions/\$\{StreamFunction\.Arn\}"
    r"/response-streaming-invocations"
)
MAX_STREAM_MILLIS = 15 * 60 * 1000


class _NoManagedPolicies:
    """The translator's policy loader; the template names no AWS managed policy by name."""

    def load(self) -> dict[str, str]:
        return {}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """template.yaml as CloudFormation reads it (short-form tags in their long form)."""
    return SamTemplate.load(PROJECT_ROOT / "template.yaml").document


@pytest.fixture(scope="module")
def deployed_paths() -> dict[str, Any]:
    """The REST API's paths as SAM's translator writes them, with local code locations packaged to S3."""
    document = yaml_parse((PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8"))
    for resource in document["Resources"].values():
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if key in resource.get("Properties", {}):
                resource["Properties"][key] = "s3://bucket/key"
    region = os.environ.get("AWS_DEFAULT_REGION")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    try:
        translated = transform(document, {}, _NoManagedPolicies())
    finally:
        if region is None:
            os.environ.pop("AWS_DEFAULT_REGION")
        else:
            os.environ["AWS_DEFAULT_REGION"] = region
    paths: dict[str, Any] = translated["Resources"]["StepwiseApi"]["Properties"]["Body"]["paths"]
    return paths


def routes_of(template: dict[str, Any], logical_id: str) -> set[tuple[str, str]]:
    events = template["Resources"][logical_id]["Properties"]["Events"].values()
    return {(event["Properties"]["Method"].upper(), event["Properties"]["Path"]) for event in events}


def test_the_streamed_routes_belong_to_the_stream_function_and_every_other_route_to_the_api(
    template: dict[str, Any],
) -> None:
    # Given the events of both HTTP functions
    streamed, buffered = routes_of(template, "StreamFunction") - PROTOCOL_ROUTES, routes_of(template, "ApiFunction")
    # Then the streamed routes (MCP's among them) go to StreamFunction, the rest to ApiFunction, and nothing
    # is left out
    assert streamed == STREAMED
    assert streamed | buffered == set(ROUTES) | set(CONSOLE_ROUTES) | set(MCP_ROUTES) and not streamed & buffered


def test_api_gateway_streams_the_stream_functions_answers(deployed_paths: dict[str, Any]) -> None:
    for method, path in sorted(STREAMED):
        # Given the integration API Gateway is given for a streamed route
        integration = deployed_paths[path][method.lower()]["x-amazon-apigateway-integration"]
        # Then it streams (STREAM, through InvokeWithResponseStream) for up to API Gateway's 15 minutes
        assert integration["type"] == "aws_proxy" and integration["responseTransferMode"] == "STREAM"
        assert STREAM_INVOCATION_URI.fullmatch(integration["uri"]["Fn::Sub"]), integration["uri"]
        assert integration["timeoutInMillis"] == MAX_STREAM_MILLIS


def test_the_streamed_routes_are_protected_as_every_other_route(deployed_paths: dict[str, Any]) -> None:
    # Given the security of each method of the deployed API
    security = {
        (method.upper(), path): spec["security"]
        for path, item in deployed_paths.items()
        for method, spec in item.items()
    }
    # Then a streamed route asks for the same API key (authorizer and usage plan) or SigV4 as a buffered one
    assert security[("GET", "/v1/runs/{run_id}/events")] == security[("GET", "/v1/runs/{run_id}")]
    assert security[("POST", "/v1/chat/completions")] == security[("POST", "/v1/runs")]
    assert all(security[route] == security[("POST", "/v1/runs")] for route in MCP_ROUTES)


def test_the_stream_function_runs_its_app_behind_the_web_adapter_for_its_architecture(
    template: dict[str, Any],
) -> None:
    # Given the stream function and the architecture every function is built for
    function = template["Resources"]["StreamFunction"]["Properties"]
    architectures = template["Globals"]["Function"]["Architectures"]
    variables = function["Environment"]["Variables"]
    # Then it has the adapter's layer for that architecture, in the deploying region and partition (AWS's
    # public layer unless the WebAdapterLayerArn parameter names another)
    (entry,) = function["Layers"]
    public = entry["Fn::If"][1] if "Fn::If" in entry else entry
    layer = ADAPTER_LAYER.fullmatch(public.get("Fn::Sub", ""))
    assert layer is not None and [ADAPTER_ARCH[layer["arch"]]] == architectures
    # And the adapter runs the handler script, streams the answers, and probes the app's port
    assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert variables["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert function["Handler"] == "run.sh"
    # And a stream may last as long as API Gateway keeps it open
    assert function["Timeout"] * 1000 >= MAX_STREAM_MILLIS


def test_the_handler_script_serves_the_functions_app_on_the_adapters_port_on_loopback(
    template: dict[str, Any],
) -> None:
    # Given the script the adapter starts, in the function's code
    function = template["Resources"]["StreamFunction"]["Properties"]
    script = Path(PROJECT_ROOT / function["CodeUri"] / function["Handler"])
    text = script.read_text(encoding="utf-8")
    # Then it is executable and starts uvicorn with functions/stream/app.py's `app` on 127.0.0.1:$AWS_LWA_PORT
    assert os.access(script, os.X_OK)
    assert "uvicorn app:app" in text and "--host 127.0.0.1" in text and "AWS_LWA_PORT" in text
    assert function["Environment"]["Variables"]["AWS_LWA_PORT"] == "8080"


def statements(template: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    policies = template["Resources"][logical_id]["Properties"]["Policies"]
    return [statement for policy in policies if "Statement" in policy for statement in policy["Statement"]]


def test_the_stream_function_may_not_list_answer_or_scan(template: dict[str, Any]) -> None:
    # Given the stream function's own statements
    stream_statements = statements(template, "StreamFunction")
    actions = {action for s in stream_statements for action in s["Action"]}
    # Then it reads, starts and (for A2A and MCP) cancels runs, and can do nothing only the other routes need
    assert {"states:StartExecution", "states:StopExecution", "dynamodb:Query"} <= actions
    assert not actions & {"states:SendTaskSuccess", "states:SendTaskFailure", "dynamodb:Scan"}
    assert not [s for s in stream_statements if "index" in str(s["Resource"])]


def test_a2a_streams_from_the_stream_function_its_methods_keyed_its_cards_public(
    deployed_paths: dict[str, Any],
) -> None:
    for method, path in sorted(A2A_ROUTES):
        # Given what API Gateway is given for an A2A route
        spec = deployed_paths[path][method.lower()]
        integration = spec["x-amazon-apigateway-integration"]
        # Then the stream function answers it, streamed; a card needs no key, a method the key runs need
        assert integration["responseTransferMode"] == "STREAM" and STREAM_INVOCATION_URI.fullmatch(
            integration["uri"]["Fn::Sub"]
        )
        public = (method, path) in a2a.PUBLIC_ROUTES
        assert spec["security"] == ([] if public else deployed_paths["/v1/runs"]["post"]["security"]), path


def test_the_stream_function_stops_executions_as_narrowly_as_the_api_function(template: dict[str, Any]) -> None:
    # Given the statements that let each function stop an execution (an MCP call cancelled cancels its run)
    def stopping(logical_id: str) -> list[Any]:
        return [s["Resource"] for s in statements(template, logical_id) if "states:StopExecution" in s["Action"]]

    # Then the stream function may stop the agent's executions only, exactly as the API function may
    assert stopping("StreamFunction") == stopping("ApiFunction") != []
