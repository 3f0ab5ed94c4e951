"""What an HTTP tool sends: the path stays under the base URL, arguments and the API key go where told."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import ApiConfig
from stepwise.tools.http_clients import ClientsByOrigin
from stepwise.tools.http_tool import HttpTool
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint, string_properties


def files_api(server: ScriptableToolServer, **settings: Any) -> dict[str, Any]:
    tools = [endpoint("read_file", "/files/{name}", string_properties("name", "mode"))]
    return {"apis": [api_entry(f"{server.url}/v1", tools, **settings)]}


@pytest.mark.parametrize(
    ("name", "expected_path"),
    [
        ("../../admin", "/v1/files/..%2F..%2Fadmin"),
        ("a?b#c", "/v1/files/a%3Fb%23c"),
        ("x@evil.com", "/v1/files/x%40evil.com"),
        ("//attacker.example/x", "/v1/files/%2F%2Fattacker.example%2Fx"),
    ],
)
def test_path_arguments_are_encoded_into_one_segment(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer, name: str, expected_path: str
) -> None:
    # Given a tool whose path has a {name} placeholder
    invoker = make_invoker(files_api(tool_server))

    # When the model passes a value that tries to leave the segment
    observation = invoker.invoke(call("read_file", name=name))

    # Then the server received exactly one request, still under /v1/files/, with the value encoded
    assert observation.ok, observation.error
    assert [request.path for request in tool_server.requests] == [expected_path]
    assert tool_server.requests[0].raw_query == ""


@pytest.mark.parametrize("name", [".", ".."])
def test_a_dot_segment_path_argument_is_refused_naming_the_parameter(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer, name: str
) -> None:
    # Given a tool whose path has a {name} placeholder
    invoker = make_invoker(files_api(tool_server))

    # When the model passes a dot segment, which a server would resolve even percent-encoded
    observation = invoker.invoke(call("read_file", name=name))

    # Then the call fails naming the parameter and the reason, and nothing is sent
    assert not observation.ok
    assert observation.error == "invalid arguments: path parameter name must not contain '.' or '..' segments"
    assert tool_server.requests == []


def test_get_sends_the_other_arguments_as_a_query_string(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a GET tool with a path argument and a query argument
    invoker = make_invoker(files_api(tool_server))

    # When it is called with both, plus an argument the schema does not declare
    invoker.invoke(call("read_file", name="notes.txt", mode="r w", sneaky="1"))

    # Then the path argument is in the path, the declared one in the query, the undeclared one nowhere
    request = tool_server.requests[0]
    assert (request.method, request.path) == ("GET", "/v1/files/notes.txt")
    assert request.query == {"mode": ["r w"]}
    assert request.body == b""


def test_post_sends_the_other_arguments_as_a_json_body(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a POST tool with a path argument and body arguments of several types
    properties = {
        "order_id": {"type": "string"},
        "quantity": {"type": "integer"},
        "gift": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
    }
    tools = [endpoint("update_order", "/orders/{order_id}", properties, method="POST")]
    invoker = make_invoker({"apis": [api_entry(f"{tool_server.url}/shop", tools)]})

    # When it is called
    observation = invoker.invoke(call("update_order", order_id="A-1", quantity=3, gift=True, tags=["red"]))

    # Then the body is JSON of the non-path arguments, and the echoed answer comes back
    request = tool_server.requests[0]
    assert (request.method, request.path, request.raw_query) == ("POST", "/shop/orders/A-1", "")
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"quantity": 3, "gift": True, "tags": ["red"]}
    assert json.loads(observation.content)["method"] == "POST"


def test_list_query_arguments_are_repeated_and_booleans_written_as_json(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a GET tool taking a list and a boolean
    properties = {"ids": {"type": "array", "items": {"type": "integer"}}, "exact": {"type": "boolean"}}
    invoker = make_invoker({"apis": [api_entry(tool_server.url, [endpoint("search", "/search", properties)])]})

    # When it is called
    invoker.invoke(call("search", ids=[1, 2], exact=False))

    # Then the query repeats the list and writes the boolean as a JSON literal
    assert tool_server.requests[0].query == {"ids": ["1", "2"], "exact": ["false"]}


@pytest.mark.parametrize(
    ("api_key", "header", "expected"),
    [
        ({"in": "header", "name": "X-API-Key", "value": "key-4242"}, "x-api-key", "key-4242"),
        ({"in": "bearer", "value": "key-4242"}, "authorization", "Bearer key-4242"),
    ],
)
def test_the_api_key_is_sent_in_the_configured_header(
    make_invoker: MakeInvoker,
    tool_server: ScriptableToolServer,
    api_key: dict[str, str],
    header: str,
    expected: str,
) -> None:
    # Given an API whose key goes in a header
    invoker = make_invoker(files_api(tool_server, apiKey=api_key))

    # When a tool of it is called
    invoker.invoke(call("read_file", name="a"))

    # Then the server saw the key where configured, and not in the query
    request = tool_server.requests[0]
    assert request.headers[header] == expected
    assert request.raw_query == ""


def test_the_api_key_in_the_query_wins_over_an_argument_of_the_same_name(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API whose key goes in the query as "key", and a tool that also declares "key"
    tools = [endpoint("lookup", "/lookup", string_properties("key", "q"))]
    raw = {"apis": [api_entry(tool_server.url, tools, apiKey={"in": "query", "name": "key", "value": "key-4242"})]}
    invoker = make_invoker(raw)

    # When the model tries to supply its own key
    invoker.invoke(call("lookup", key="forged", q="x"))

    # Then only the configured key was sent
    assert tool_server.requests[0].query == {"q": ["x"], "key": ["key-4242"]}


def test_a_non_internal_api_connects_to_the_checked_address_with_the_original_host_header(
    tool_server: ScriptableToolServer, http_clients: ClientsByOrigin
) -> None:
    # Given a named host whose first address refuses connections and second is the tool server,
    # with an address policy that admits loopback (as a public address would be admitted)
    api = ApiConfig.model_validate(
        api_entry(f"http://tools.test:{tool_server.port}/v1", [endpoint("ping", "/ping")], internal=False)
    )
    tool = HttpTool(
        api,
        api.tools[0],
        http_clients=http_clients,
        secret_resolver=SecretResolver(),
        host_resolver=lambda host, port: ["127.0.0.2", "127.0.0.1"] if host == "tools.test" else [],
        address_policy=lambda address: None,
    )

    # When the tool is called
    result = tool.call({})

    # Then the request reached the server at the checked address, addressed to the configured name
    assert result.ok, result.error
    assert tool_server.requests[0].headers["host"] == f"tools.test:{tool_server.port}"
    assert tool_server.requests[0].path == "/v1/ping"
