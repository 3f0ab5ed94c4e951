"""template.yaml declares every API route (on ApiFunction, or StreamFunction for the two that stream), and
protects each one."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.interop.a2a import paths as a2a
from stepwise.interop.mcp_server import MCP_ROUTES
from stepwise.local.template import SamTemplate
from stepwise.steps.api import ROUTES
from stepwise.steps.api.route_table import CONSOLE_ROUTES
from tests.conftest import PROJECT_ROOT

PROTECTED = {"Fn::If": ["UseIamAuth", [{"sigv4": []}], [{"api_key": [], "caller_key": []}]]}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """template.yaml as CloudFormation reads it (short-form tags in their long form)."""
    return SamTemplate.load(PROJECT_ROOT / "template.yaml").document


def test_every_route_of_the_api_is_an_event_of_an_http_function(template: dict[str, Any]) -> None:
    # Given the events of the API function and of the stream function
    resources = template["Resources"]
    events = [
        event
        for logical_id in ("ApiFunction", "StreamFunction")
        for event in resources[logical_id]["Properties"]["Events"].values()
    ]
    # Then they are exactly the routes the handler serves (the API's, the console's, MCP's), all on the one REST API
    declared = {(event["Properties"]["Method"].upper(), event["Properties"]["Path"]) for event in events}
    assert declared == set(ROUTES) | set(CONSOLE_ROUTES) | a2a.KEYED_ROUTES | a2a.PUBLIC_ROUTES | set(MCP_ROUTES)
    assert {event["Properties"]["RestApiId"]["Ref"] for event in events} == {"StepwiseApi"}


def test_every_method_of_the_rest_api_requires_the_api_key_or_iam(template: dict[str, Any]) -> None:
    # Given the REST API's definition
    definition = template["Resources"]["StepwiseApi"]["Properties"]["DefinitionBody"]
    methods = {
        (method.upper(), path): spec
        for path, by_method in definition["paths"].items()
        for method, spec in by_method.items()
    }
    # Then it covers every route, and each one of the API asks for the API key, or a SigV4 signature with
    # ApiAuth=IAM (MCP's and A2A's methods too); the console's files and the A2A Agent Cards alone are public
    keyed = set(ROUTES) | a2a.KEYED_ROUTES | set(MCP_ROUTES)
    assert set(methods) == keyed | set(CONSOLE_ROUTES) | a2a.PUBLIC_ROUTES
    assert all(methods[route]["security"] == PROTECTED for route in keyed)
    assert all(methods[route]["security"] == [] for route in set(CONSOLE_ROUTES) | a2a.PUBLIC_ROUTES)
    assert definition["securityDefinitions"]["api_key"] == {"type": "apiKey", "name": "x-api-key", "in": "header"}
    assert definition["securityDefinitions"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"


def test_api_keys_are_the_default_auth_and_come_with_a_usage_plan(template: dict[str, Any]) -> None:
    # Then the auth parameter defaults to API keys, and the API creates its usage plan
    assert template["Parameters"]["ApiAuth"]["Default"] == "API_KEY"
    assert template["Conditions"]["UseIamAuth"] == {"Fn::Equals": [{"Ref": "ApiAuth"}, "IAM"]}
    plan = template["Resources"]["StepwiseApi"]["Properties"]["Auth"]["UsagePlan"]
    assert plan["CreateUsagePlan"] == "PER_API"


def test_the_api_key_comes_from_the_authorizer_which_reads_either_header(template: dict[str, Any]) -> None:
    # Given the REST API's definition and the authorizer's resources
    resources = template["Resources"]
    definition = resources["StepwiseApi"]["Properties"]["DefinitionBody"]
    authorizer = definition["securityDefinitions"]["caller_key"]["x-amazon-apigateway-authorizer"]
    # Then with API keys the usage-plan key is the authorizer's, which is a request authorizer without cache
    assert definition["x-amazon-apigateway-api-key-source"] == {"Fn::If": ["UseApiKeyAuth", "AUTHORIZER", "HEADER"]}
    assert (authorizer["type"], authorizer["authorizerResultTtlInSeconds"]) == ("request", 0)
    # And the authorizer has no permission beyond its own logs and traces, invocable by this API only
    assert "Policies" not in resources["AuthorizerFunction"]["Properties"]
    permission = resources["AuthorizerInvokePermission"]["Properties"]
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert "${StepwiseApi}/authorizers/*" in permission["SourceArn"]["Fn::Sub"]
