"""A document that cannot be imported fails at load time, naming the operation and the reason."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import build_tool_registry
from stepwise.tools.openapi import parse_document
from tests.unit.tools.openapi.conftest import FIXTURES, ImportSource

BASE = "https://api.example.com"


def document(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    """A minimal OpenAPI 3.1 document."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas or {}},
    }


def alias_bomb(levels: int) -> str:
    """A YAML OpenAPI document of a few hundred bytes whose aliases stand for 10**levels values."""
    lines = [
        "openapi: 3.0.0",
        "info: {title: t, version: '1'}",
        "paths: {}",
        "x-a0: &a0 [x, x, x, x, x, x, x, x, x, x]",
    ]
    lines += [f"x-a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]" for level in range(1, levels)]
    return "\n".join(lines) + "\n"


def json_body(schema: dict[str, Any]) -> dict[str, Any]:
    """A required JSON request body."""
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def import_error(import_source: ImportSource, entry: dict[str, Any]) -> str:
    """The message of the `ConfigError` importing ``entry`` raises when unsupported operations fail it."""
    with pytest.raises(ConfigError) as error:
        import_source({"baseUrl": BASE, "onUnsupported": "fail", **entry})
    return str(error.value)


def test_a_required_body_that_is_not_json_names_the_operation_and_the_media_type(import_source: ImportSource) -> None:
    # Given the pet store with its multipart upload
    # When it is imported without excluding the upload
    message = import_error(import_source, {"source": "petstore-3.0.yaml"})
    # Then the error names the upload and why it cannot be a tool
    assert message == (
        "openapi petstore-3.0.yaml: operation uploadPhoto: the multipart body has only file fields (file), "
        "which a tool cannot send"
    )


def test_a_reference_to_another_document_names_the_operation_and_the_reference(import_source: ImportSource) -> None:
    # Given an operation whose body refers to another file
    paths = {"/a": {"post": {"operationId": "create", "requestBody": json_body({"$ref": "other.yaml#/Thing"})}}}
    # When it is imported
    message = import_error(import_source, {"document": document(paths)})
    # Then the error names the operation and the reference
    assert message == (
        "openapi inline document: operation create: $ref 'other.yaml#/Thing' points outside the document, "
        "which is not supported"
    )


def test_a_reference_to_nothing_names_the_operation(import_source: ImportSource) -> None:
    # Given a body that refers to a schema that does not exist
    paths = {"/a": {"post": {"operationId": "create", "requestBody": json_body({"$ref": "#/components/schemas/Gone"})}}}
    # When it is imported
    message = import_error(import_source, {"document": document(paths)})
    # Then the error names the operation and the reference
    assert message == (
        "openapi inline document: operation create: $ref '#/components/schemas/Gone' points to nothing in the document"
    )


def test_an_undeclared_path_placeholder_names_the_operation_by_method_and_path(import_source: ImportSource) -> None:
    # Given an operation without operationId whose path has an undeclared {id}
    paths = {"/things/{id}": {"get": {"summary": "Get a thing"}}}
    # When it is imported
    message = import_error(import_source, {"document": document(paths)})
    # Then the error names the operation by method and path, and the placeholder
    assert message == (
        "openapi inline document: operation GET /things/{id}: path parameter id is in the path but not declared"
    )


def test_all_of_members_with_contradicting_types_are_refused(import_source: ImportSource) -> None:
    # Given a body that must be both a string and an object
    schema = {"allOf": [{"type": "string"}, {"type": "object"}]}
    paths = {"/a": {"post": {"operationId": "create", "requestBody": json_body(schema)}}}
    # When it is imported
    message = import_error(import_source, {"document": document(paths)})
    # Then the error names the operation and both types
    assert message == "openapi inline document: operation create: allOf combines type 'string' with type 'object'"


def test_two_operations_with_the_same_tool_name_are_told_apart_in_document_order(import_source: ImportSource) -> None:
    # Given two operationIds that sanitise to the same name
    paths = {"/a": {"get": {"operationId": "things.list"}}, "/b": {"get": {"operationId": "things/list"}}}
    # When it is imported
    registry = import_source({"baseUrl": BASE, "document": document(paths)})
    # Then the first keeps the name, the second is numbered, and the renaming is noted
    assert registry.names() == ["things_list", "things_list_2"]
    assert registry.notes == [
        "openapi inline document: renamed operation things/list: tool name things_list is also the name of "
        "operation things.list; named things_list_2"
    ]


def test_excluding_one_of_two_clashing_operations_leaves_the_other_its_name(import_source: ImportSource) -> None:
    # Given two operationIds that sanitise to the same name, one of them excluded
    paths = {"/a": {"get": {"operationId": "things.list"}}, "/b": {"get": {"operationId": "things/list"}}}
    entry = {"baseUrl": BASE, "document": document(paths), "exclude": {"operations": ["things.list"]}}
    # When it is imported
    registry = import_source(entry)
    # Then the other one has the name, with nothing renamed
    assert (registry.names(), registry.notes) == (["things_list"], [])


def test_an_operation_that_cannot_be_offered_is_skipped_with_its_reason_by_default(
    import_source: ImportSource,
) -> None:
    # When the pet store, whose upload has only a file field, is imported
    registry = import_source({"baseUrl": BASE, "source": "petstore-3.0.yaml"})
    # Then the upload is left out, the rest is offered, and the note says why
    assert "uploadPhoto" not in registry and "placeOrder" in registry
    assert registry.notes == [
        "openapi petstore-3.0.yaml: skipped operation uploadPhoto: the multipart body has only file fields "
        "(file), which a tool cannot send"
    ]


MALFORMED_SCHEMAS = [
    pytest.param({"allOf": [{"type": "object"}, {"type": 5}]}, id="a number for a type in allOf"),
    pytest.param(
        {"allOf": [{"properties": [1]}, {"properties": {"x": {"type": "string"}}}]}, id="a list for properties in allOf"
    ),
]


@pytest.mark.parametrize("schema", MALFORMED_SCHEMAS)
def test_an_operation_with_a_malformed_schema_is_skipped_naming_it(
    import_source: ImportSource, schema: dict[str, Any]
) -> None:
    # Given a document whose one operation has a body schema the OpenAPI schema does not allow, beside a sound one
    paths = {
        "/a": {"post": {"operationId": "a", "requestBody": json_body(schema)}},
        "/ok": {"get": {"operationId": "ok"}},
    }
    # When it is imported
    registry = import_source({"baseUrl": BASE, "document": document(paths)})
    # Then the sound operation is offered and the malformed one is left out with a note naming it
    assert registry.names() == ["ok"]
    assert len(registry.notes) == 1
    assert ": skipped operation a: a malformed part of its description (" in registry.notes[0]


@pytest.mark.parametrize("schema", MALFORMED_SCHEMAS)
def test_an_operation_with_a_malformed_schema_fails_the_import_naming_it_when_asked(
    import_source: ImportSource, schema: dict[str, Any]
) -> None:
    # Given the same document, with unsupported operations failing the import
    paths = {
        "/a": {"post": {"operationId": "a", "requestBody": json_body(schema)}},
        "/ok": {"get": {"operationId": "ok"}},
    }
    # When it is imported, then the error names the operation and says its description is malformed
    assert "operation a: a malformed part of its description (" in import_error(
        import_source, {"document": document(paths)}
    )


@pytest.mark.parametrize(
    ("chosen", "reason"),
    [
        ({"include": {"tags": ["petz"]}}, "include: no operation has the tag 'petz'"),
        ({"exclude": {"operations": ["deletePets"]}}, "exclude: the document has no operation 'deletePets'"),
    ],
)
def test_a_filter_naming_something_the_document_lacks_is_refused(
    import_source: ImportSource, chosen: dict[str, Any], reason: str
) -> None:
    # Given a filter with a typo
    # When the pet store is imported
    message = import_error(import_source, {"source": "petstore-3.0.yaml", **chosen})
    # Then the error names the filter and the unknown name
    assert message == f"openapi petstore-3.0.yaml: {reason}"


def test_a_source_that_leaves_no_operation_is_refused(import_source: ImportSource) -> None:
    # Given a filter that excludes everything it includes
    entry = {"source": "petstore-3.0.yaml", "include": {"tags": ["store"]}, "exclude": {"tags": ["store"]}}
    # When it is imported
    # Then there is nothing to offer, which is an error
    assert import_error(import_source, entry) == "openapi petstore-3.0.yaml: no operation is left to offer as a tool"


def test_schemas_that_expand_beyond_the_size_limit_are_refused(import_source: ImportSource) -> None:
    # Given six levels of schemas, each referring to the next one ten times (a million nodes expanded)
    schemas: dict[str, Any] = {
        f"L{level}": {
            "type": "object",
            "properties": {f"p{n}": {"$ref": f"#/components/schemas/L{level + 1}"} for n in range(10)},
        }
        for level in range(6)
    }
    schemas["L6"] = {"type": "string"}
    paths = {"/a": {"post": {"operationId": "bomb", "requestBody": json_body({"$ref": "#/components/schemas/L0"})}}}
    # When it is imported
    message = import_error(import_source, {"document": document(paths, schemas)})
    # Then it stops at the limit, naming the operation
    assert message == "openapi inline document: operation bomb: the schemas are larger than 20000 nodes"


def test_an_imported_name_that_another_source_already_uses_is_refused() -> None:
    # Given a built-in calculator and a document with an operation called calculator
    paths = {"/calc": {"get": {"operationId": "calculator"}}}
    config = parse_tools_config(
        {"builtin": ["calculator"], "openapi": [{"document": document(paths), "baseUrl": BASE}]}
    )
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build_tool_registry(config, config_dir=FIXTURES)
    # Then the error names both sources
    assert str(error.value) == "builtin: tool calculator is already defined by openapi inline document"


def test_a_source_needs_exactly_one_of_source_or_document(import_source: ImportSource) -> None:
    # Given an entry with neither a source nor a document
    # When it is read
    with pytest.raises(ConfigError) as error:
        import_source({"baseUrl": BASE})
    # Then the error names the entry and the rule
    assert str(error.value) == (
        "tools config: openapi[0]: give exactly one of 'source' (a file, s3:// or https:// URL) or 'document' (inline)"
    )


def test_a_yaml_alias_bomb_is_refused_naming_the_document_and_the_aliases() -> None:
    # Given a YAML document whose nested aliases expand to over a million values
    text = alias_bomb(levels=6)
    # When it is parsed
    with pytest.raises(ConfigError) as error:
        parse_document(text, where="bomb.yaml")
    # Then it is refused, naming the document and its YAML aliases
    assert str(error.value) == (
        "openapi bomb.yaml: the YAML aliases of the document expand it to more than 1000000 values "
        "(the limit against alias bombs)"
    )
