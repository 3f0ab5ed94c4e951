"""``bindings`` on a hand-written HTTP tool: an argument goes to the header, query or body field named."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint, string_properties


def bound_endpoint(method: str, bindings: dict[str, Any], *names: str) -> dict[str, Any]:
    """A tool ``op`` at /op taking string arguments ``names``, with ``bindings``."""
    return endpoint("op", "/op", string_properties(*names), method=method, bindings=bindings)


def test_an_argument_bound_to_a_header_is_sent_under_the_header_name(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a GET tool whose tenant argument is the X-Tenant header
    tool = bound_endpoint("GET", {"tenant": {"in": "header", "name": "X-Tenant"}}, "tenant", "q")
    invoker = make_invoker({"apis": [api_entry(tool_server.url, [tool])]})
    # When it is called
    invoker.invoke(call("op", tenant="acme", q="shoes"))
    # Then tenant is a header and q is still in the query
    request = tool_server.requests[0]
    assert request.headers["x-tenant"] == "acme"
    assert request.query == {"q": ["shoes"]}


def test_arguments_bound_to_body_fields_are_sent_under_their_wire_names(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a POST tool whose first_name argument is the body field firstName, and whose page goes to the query
    bindings = {"first_name": {"in": "body", "name": "firstName"}, "page": {"in": "query"}}
    tool = bound_endpoint("POST", bindings, "first_name", "page")
    invoker = make_invoker({"apis": [api_entry(tool_server.url, [tool])]})
    # When it is called
    invoker.invoke(call("op", first_name="Ada", page="2"))
    # Then the body holds firstName only and the page is in the query
    request = tool_server.requests[0]
    assert request.json() == {"firstName": "Ada"}
    assert request.query == {"page": ["2"]}


def test_the_api_key_header_wins_over_an_argument_header_of_the_same_name_in_any_case(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API key in X-API-Key and a tool that binds an argument to x-api-key
    tool = bound_endpoint("GET", {"key": {"in": "header", "name": "x-api-key"}}, "key")
    api_key = {"in": "header", "name": "X-API-Key", "value": "configured-key"}
    invoker = make_invoker({"apis": [api_entry(tool_server.url, [tool], apiKey=api_key)]})
    # When the model passes its own key
    invoker.invoke(call("op", key="model-chosen"))
    # Then only the configured key is sent
    assert tool_server.requests[0].headers["x-api-key"] == "configured-key"


@pytest.mark.parametrize(
    ("method", "bindings", "reason"),
    [
        ("GET", {"nope": {"in": "query"}}, "bindings.nope: nope is not a property of parameter"),
        ("GET", {"a": {"in": "header", "name": "Host"}}, "the Host header is set by the HTTP client"),
        ("GET", {"a": {"in": "path"}}, "only a {placeholder} of the path is bound to the path"),
        ("GET", {"a": {"in": "body"}}, "a GET request has no body"),
        ("GET", {"a": {"in": "query", "multiSegment": True}}, "multi_segment applies to a path argument only"),
        ("POST", {"a": {"in": "body"}, "b": {"in": "body", "name": "b"}}, "a is the whole body"),
    ],
)
def test_bindings_that_cannot_work_are_refused_naming_the_tool(
    method: str, bindings: dict[str, Any], reason: str
) -> None:
    # Given a tool with an impossible binding
    raw = {"apis": [api_entry("https://api.example.com", [bound_endpoint(method, bindings, "a", "b")])]}
    # When the configuration is read
    with pytest.raises(ConfigError) as error:
        parse_tools_config(raw)
    # Then the error names the tool and the reason
    assert "tool op" in str(error.value)
    assert reason in str(error.value)
