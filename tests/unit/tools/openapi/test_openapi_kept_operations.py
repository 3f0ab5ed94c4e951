"""Operations that used to be refused for fixable reasons are kept: keywords that mean nothing once references
are inlined, and parameter names that clash or that a model cannot take.

tests/fixtures/openapi/anchors-and-clashes-3.1.yaml holds the shapes of OpenAI's description
(``$recursiveAnchor`` and ``$recursiveRef`` in CompoundFilter, with ``$id``, ``$anchor``, ``$dynamicAnchor``
and ``$dynamicRef`` beside them) and Twilio's (``StartTime``, ``StartTime<`` and ``StartTime>`` in one query
string). The requests the tools send go to a stand-in judged by openapi-core against that same document
(tests/support/openapi_judge.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.tools import ToolRegistry
from tests.support.openapi_judge import OpenApiJudge
from tests.support.tool_server import Judged, ScriptableToolServer
from tests.unit.tools.openapi.conftest import FIXTURES, ImportSource, parameters_of, sent_by, specs_by_name

DOCUMENT = "anchors-and-clashes-3.1.yaml"
INLINED_AWAY = ("$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$dynamicRef", "$recursiveRef", "$schema")
ACCOUNT = "AC" + "0" * 32


@pytest.fixture(scope="module")
def judged() -> Iterator[tuple[ScriptableToolServer, ToolRegistry]]:
    """The document's tools, their base URL a stand-in that answers 400 to what the document does not allow."""
    judge: list[OpenApiJudge] = []
    with ScriptableToolServer(default=Judged(lambda request: judge[0].problems(request))) as server:
        judge.append(OpenApiJudge(yaml.safe_load((FIXTURES / DOCUMENT).read_text()), server.url))
        from stepwise.config.tool_sources import parse_tools_config
        from stepwise.tools import build_tool_registry

        source = {"source": DOCUMENT, "baseUrl": server.url, "internal": True}
        registry = build_tool_registry(parse_tools_config({"openapi": [source]}), config_dir=FIXTURES)
        yield server, registry
        registry.close()


def keywords_in(schema: Any) -> set[str]:
    """Every mapping key anywhere in ``schema``."""
    if isinstance(schema, dict):
        return set(schema) | {key for value in schema.values() for key in keywords_in(value)}
    if isinstance(schema, list):
        return {key for value in schema for key in keywords_in(value)}
    return set()


def test_every_operation_of_the_document_is_a_tool(judged: tuple[ScriptableToolServer, ToolRegistry]) -> None:
    # Given the document imported
    _, registry = judged
    # Then its three operations are tools, and none was skipped
    assert registry.names() == ["createResponse", "createConversation", "ListCall"]
    assert [note for note in registry.notes if "skipped" in note] == []


def test_keywords_that_mean_nothing_once_inlined_are_dropped_and_back_references_cut(
    judged: tuple[ScriptableToolServer, ToolRegistry],
) -> None:
    # Given the tools whose schemas had anchors, ids and references back to an enclosing schema
    _, registry = judged
    response, conversation = (parameters_of(registry, name) for name in ("createResponse", "createConversation"))
    # Then none of those keywords is left in what the model is offered
    assert not keywords_in(response) & set(INLINED_AWAY)
    assert not keywords_in(conversation) & set(INLINED_AWAY)
    # And a filter's nested filters say they are the enclosing filter again instead of repeating it
    filters = response["properties"]["body"]["properties"]["filters"]
    assert filters["required"] == ["type", "filters"]
    assert filters["properties"]["filters"]["items"]["anyOf"][1] == {
        "description": "(the enclosing schema again, which is not repeated)"
    }


def test_a_tool_whose_schema_had_a_recursive_anchor_sends_what_the_document_allows(
    judged: tuple[ScriptableToolServer, ToolRegistry],
) -> None:
    # Given createResponse and a nested filter
    server, registry = judged
    filters = {"type": "and", "filters": [{"key": "lang", "value": "en"}, {"type": "or", "filters": []}]}
    # When the model calls it
    observation, sent = sent_by(server, registry, "createResponse", body={"model": "m", "filters": filters})
    # Then the judge allowed the request, which carried the body as given
    assert observation.ok, observation.content
    assert json.loads(sent.body) == {"model": "m", "filters": filters}


def test_parameters_named_with_comparison_operators_get_distinct_arguments_mapped_back_to_their_names(
    judged: tuple[ScriptableToolServer, ToolRegistry],
) -> None:
    # Given ListCall, whose query takes StartTime, StartTime< and StartTime>
    server, registry = judged
    assert list(parameters_of(registry, "ListCall")["properties"]) == [
        "AccountSid",
        "StartTime",
        "StartTime_lt",
        "StartTime_gt",
        "PageSize",
    ]
    # When the model asks for the calls of one week
    arguments = {"AccountSid": ACCOUNT, "StartTime_gt": "2025-01-01T00:00:00Z", "StartTime_lt": "2025-01-08T00:00:00Z"}
    observation, sent = sent_by(server, registry, "ListCall", **arguments, PageSize=20)
    # Then the request carried each value under its real name, and the judge allowed it
    assert observation.ok, observation.content
    assert sent.path == f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json"
    assert sent.query == {
        "StartTime>": ["2025-01-01T00:00:00Z"],
        "StartTime<": ["2025-01-08T00:00:00Z"],
        "PageSize": ["20"],
    }


def test_names_that_clash_inside_one_location_get_the_location_then_a_number(import_source: ImportSource) -> None:
    # Given an operation whose query takes page[size], page_size and page.size, and whose path takes a
    # parameter called body and query one called request_body (the names the request body goes by)
    parameters = [
        {"name": "page[size]", "in": "query", "schema": {"type": "integer"}},
        {"name": "page_size", "in": "query", "schema": {"type": "integer"}},
        {"name": "page.size", "in": "query", "schema": {"type": "integer"}},
        {"name": "body", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "request_body", "in": "query", "schema": {"type": "string"}},
    ]
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Clashes", "version": "1"},
        "paths": {
            "/notes/{body}": {
                "post": {
                    "operationId": "createNote",
                    "parameters": parameters,
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    # When it is imported
    registry = import_source({"document": document, "baseUrl": "http://127.0.0.1:9", "internal": True})
    # Then each parameter has its own argument, in the documented order of names, and the body keeps its name
    properties = specs_by_name(registry)["createNote"].parameters["properties"]
    assert list(properties) == [
        "page_size",
        "query_page_size",
        "query_page_size_2",
        "path_body",
        "query_request_body",
        "body",
    ]
    registry.close()


def test_a_lone_operator_in_a_name_is_kept_as_a_word(import_source: ImportSource, tmp_path: Path) -> None:
    # Given a query parameter named price>= alone, and one made only of characters a model refuses
    parameters = [
        {"name": "price>=", "in": "query", "schema": {"type": "number"}},
        {"name": "$$", "in": "query", "schema": {"type": "string"}},
    ]
    operation = {"operationId": "listItems", "parameters": parameters, "responses": {"200": {"description": "ok"}}}
    document = {"openapi": "3.1.0", "info": {"title": "Items", "version": "1"}, "paths": {"/items": {"get": operation}}}
    # When it is imported
    registry = import_source({"document": document, "baseUrl": "http://127.0.0.1:9", "internal": True})
    # Then the operator is spelt out, and the name with no usable character gets a stand-in
    assert list(specs_by_name(registry)["listItems"].parameters["properties"]) == ["price_gte", "value"]
    registry.close()
