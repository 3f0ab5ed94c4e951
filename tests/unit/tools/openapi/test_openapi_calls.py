"""Calling imported operations: each argument reaches its place in the request, and the guards hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepwise.tools import ToolInvoker
from tests.support.tool_server import HugeBody, Redirect, ScriptableToolServer
from tests.unit.tools.config_builders import call
from tests.unit.tools.openapi.conftest import ImportSource


def invoker_for(import_source: ImportSource, source: str, base_url: str, **settings: Any) -> ToolInvoker:
    """An invoker over an imported fixture document, pointed at a loopback server."""
    entry = {"source": source, "baseUrl": base_url, "internal": True, **settings}
    return ToolInvoker(import_source(entry))


PETSTORE = "petstore-3.0.yaml"
PETSTORE_WITHOUT_UPLOAD = {"exclude": {"operations": ["uploadPhoto"]}}


def test_query_array_and_header_arguments_go_where_the_document_says(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store pointed at the test server
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When listPets is called with a limit, two statuses and a request id
    observation = invoker.invoke(call("listPets", limit=5, status=["available", "sold"], **{"X-Request-ID": "r-42"}))
    # Then the query holds limit and the repeated status, and the id is a header
    request = tool_server.requests[0]
    assert observation.ok
    assert (request.method, request.path) == ("GET", "/v2/pets")
    assert request.query == {"limit": ["5"], "status": ["available", "sold"]}
    assert request.headers["x-request-id"] == "r-42"


def test_the_body_argument_is_sent_as_the_json_body(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    pet = {"name": "Rex", "tag": None, "owner": {"email": "ann@example.com"}}
    # When updatePet is called with a path id and a body
    observation = invoker.invoke(call("updatePet", petId="p-7", body=pet))
    # Then the path holds the id and the JSON body is the pet, nothing else
    request = tool_server.requests[0]
    assert observation.ok
    assert (request.method, request.path) == ("PUT", "/v2/pets/p-7")
    assert request.headers["content-type"] == "application/json"
    assert request.json() == pet


def test_an_array_body_is_sent_as_a_json_array(import_source: ImportSource, tool_server: ScriptableToolServer) -> None:
    # Given the imported weather API
    invoker = invoker_for(import_source, "weather-3.1.yaml", tool_server.url)
    subscriptions = [{"location": "Paris", "severity": "severe"}]
    # When subscribeAlerts is called
    invoker.invoke(call("subscribeAlerts", body=subscriptions))
    # Then the body is the array
    assert tool_server.requests[0].json() == subscriptions


def test_form_without_explode_joins_and_deep_object_nests_query_values(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported tracker (labels: form, explode false; filter: deepObject; page[number])
    invoker = invoker_for(import_source, "issue-tracker-3.1.json", tool_server.url)
    # When issues are listed with labels, a filter and a page
    arguments = {"owner": "acme", "repo": "web", "labels": ["bug", "ui"], "filter": {"state": "open"}, "page_number": 2}
    invoker.invoke(call("issues_list-for-repo", **arguments))
    # Then each is written the OpenAPI way, under its original name
    request = tool_server.requests[0]
    assert request.path == "/repos/acme/web/issues"
    assert request.query == {"labels": ["bug,ui"], "filter[state]": ["open"], "page[number]": ["2"]}


def test_an_api_key_in_the_query_is_added_to_imported_operations(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the weather API with its key configured as a query parameter
    key = {"in": "query", "name": "key", "value": "weather-key-123"}
    invoker = invoker_for(import_source, "weather-3.1.yaml", tool_server.url, apiKey=key)
    # When the current weather is asked for
    observation = invoker.invoke(call("get_weather_now", location="Paris", language="en", unit="c"))
    # Then the server got the key, and the model does not see it
    assert tool_server.requests[0].query["key"] == ["weather-key-123"]
    assert "weather-key-123" not in observation.content


@pytest.mark.parametrize(
    "hostile_id",
    ["../../admin", "x?role=admin", "x#fragment", "@{attacker}", "%2e%2e/admin", "//{attacker}/steal"],
)
def test_a_path_argument_cannot_leave_its_segment_or_the_origin(
    import_source: ImportSource,
    tool_server: ScriptableToolServer,
    attacker_server: ScriptableToolServer,
    hostile_id: str,
) -> None:
    # Given the imported pet store, and a second server playing the attacker
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    pet_id = hostile_id.format(attacker=f"127.0.0.1:{attacker_server.port}")
    # When showPetById is called with a hostile id
    invoker.invoke(call("showPetById", petId=pet_id))
    # Then the request stayed one segment under /v2/pets/ on the API, and the attacker got nothing
    paths = [request.path for request in tool_server.requests]
    assert len(paths) == 1 and paths[0].startswith("/v2/pets/") and "/" not in paths[0].removeprefix("/v2/pets/")
    assert tool_server.requests[0].raw_query == ""
    assert attacker_server.requests == []


def test_a_header_argument_with_a_line_break_is_refused_before_sending(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When the request id tries to smuggle a second header
    observation = invoker.invoke(call("listPets", **{"X-Request-ID": "r-1\r\nX-Admin: yes"}))
    # Then nothing is sent and the observation names the header
    assert not observation.ok
    assert observation.error == "invalid arguments: header X-Request-ID must not hold line breaks"
    assert tool_server.requests == []


def test_a_header_argument_that_is_not_ascii_is_refused_naming_the_header(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When the request id holds a character HTTP headers cannot carry as text
    observation = invoker.invoke(call("listPets", **{"X-Request-ID": "café"}))
    # Then nothing is sent and the observation names the header and the reason
    assert observation.error == "invalid arguments: header X-Request-ID must be ASCII text"
    assert tool_server.requests == []


def test_arguments_that_break_the_imported_schema_are_returned_to_the_model_naming_the_field(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store, whose limit is at most 100
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When listPets is called with limit 500
    observation = invoker.invoke(call("listPets", limit=500))
    # Then no request is sent and the observation names the field and the rule
    assert observation.error == "invalid arguments for listPets: limit: 500 is greater than the maximum of 100"
    assert tool_server.requests == []


def test_an_argument_the_operation_does_not_declare_is_refused(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the imported pet store
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When showPetById is called with an extra argument
    observation = invoker.invoke(call("showPetById", petId="1", admin=True))
    # Then the call is refused, naming the extra argument
    assert observation.error is not None and "'admin' is not an argument of this tool" in observation.error
    assert tool_server.requests == []


def test_a_redirect_of_an_imported_operation_to_another_origin_is_not_followed(
    import_source: ImportSource, tool_server: ScriptableToolServer, attacker_server: ScriptableToolServer
) -> None:
    # Given an API that redirects showPetById to the attacker
    tool_server.on("/v2/pets/", Redirect(f"{attacker_server.url}/collect"))
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When the operation is called
    observation = invoker.invoke(call("showPetById", petId="1"))
    # Then the redirect is refused and the attacker got nothing
    assert observation.error is not None and "refused a redirect to another origin" in observation.error
    assert attacker_server.requests == []


def test_an_imported_operation_on_a_metadata_address_is_refused(import_source: ImportSource) -> None:
    # Given the pet store pointed at the cloud metadata service, not marked internal
    entry = {"source": PETSTORE, "baseUrl": "http://169.254.169.254/latest", **PETSTORE_WITHOUT_UPLOAD}
    invoker = ToolInvoker(import_source(entry))
    # When an operation is called
    observation = invoker.invoke(call("showPetById", petId="1"))
    # Then it is refused as link-local before any connection
    assert observation.error is not None and "169.254.169.254 is a link-local address" in observation.error


def test_an_oversized_response_of_an_imported_operation_is_truncated_with_a_marker(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given an API answering 1 MB, and a 2000-byte cap on the source
    tool_server.on("/v2/pets", HugeBody(size=1_000_000))
    invoker = invoker_for(
        import_source, PETSTORE, f"{tool_server.url}/v2", maxResponseBytes=2000, **PETSTORE_WITHOUT_UPLOAD
    )
    # When listPets is called
    observation = invoker.invoke(call("listPets"))
    # Then the observation holds the first 2000 bytes and says it was truncated
    assert observation.truncated
    assert observation.content.endswith("…[truncated: the response was longer than 2000 bytes]")
    assert observation.content.count("x") == 2000


def test_a_json_answer_is_passed_to_the_model_compactly(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the pet store on a server that echoes requests as JSON
    invoker = invoker_for(import_source, PETSTORE, f"{tool_server.url}/v2", **PETSTORE_WITHOUT_UPLOAD)
    # When placeOrder is called
    observation = invoker.invoke(call("placeOrder", body={"petId": 7, "quantity": 2}))
    # Then the observation is the server's JSON, with the body it received
    assert json.loads(json.loads(observation.content)["body"]) == {"petId": 7, "quantity": 2}


def test_cookie_and_matrix_path_parameters_are_sent_in_their_styles(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given an operation with a matrix path parameter, a pipe-delimited query array and a required cookie
    parameters = [
        {"name": "point", "in": "path", "required": True, "style": "matrix", "schema": {"type": "object"}},
        {"name": "ids", "in": "query", "style": "pipeDelimited", "explode": False, "schema": {"type": "array"}},
        {"name": "session", "in": "cookie", "required": True, "schema": {"type": "string"}},
    ]
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/map{point}": {"get": {"operationId": "locate", "parameters": parameters}}},
    }
    invoker = ToolInvoker(import_source({"document": document, "baseUrl": tool_server.url, "internal": True}))
    # When the model calls it
    observation = invoker.invoke(call("locate", point={"x": 1, "y": 2}, ids=["a", "b c"], session="s 1"))
    # Then each went where the document says, written in its style
    (sent,) = tool_server.requests
    assert observation.ok
    assert (sent.path, sent.raw_query, sent.headers["cookie"]) == ("/map;point=x,1,y,2", "ids=a|b%20c", "session=s%201")
