"""Real public OpenAPI documents import whole, and their tools send the requests the documents describe.

The documents are in tests/fixtures/openapi/real (sources named in its README): Shopify's Admin API
(1,473 operations), Stripe's API of 2020-03-02 (form-encoded bodies) and Discord's (OpenAPI 3.1, multipart
bodies). A loopback server records what the tools send.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

import pytest

from stepwise.tools import ToolInvoker, ToolRegistry
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import call
from tests.unit.tools.openapi.conftest import ImportReal, ImportSource, parameters_of, sent_by


@pytest.fixture(scope="module")
def shopify(import_real: ImportReal) -> ToolRegistry:
    return import_real("shopify-admin.json")


@pytest.fixture(scope="module")
def stripe(import_real: ImportReal) -> ToolRegistry:
    return import_real("stripe-2020-03-02.json")


@pytest.fixture(scope="module")
def discord(import_real: ImportReal) -> ToolRegistry:
    return import_real("discord-v10.json")


def test_a_description_of_more_than_a_thousand_operations_imports_whole(shopify: ToolRegistry) -> None:
    # Then every operation is a tool, the clashes of names cut to 64 characters are settled and noted
    assert len(shopify) == 1473
    assert all(len(name) <= 64 for name in shopify.names())
    renamed = [note for note in shopify.notes if ": renamed " in note]
    assert len(renamed) == len(shopify.notes) == 132


def test_the_clashing_names_are_the_same_at_every_import(import_real: ImportReal, shopify: ToolRegistry) -> None:
    # When the same document is imported again
    again = import_real("shopify-admin.json")
    # Then the tools have the same names in the same order
    assert again.names() == shopify.names()


def test_form_encoded_bodies_are_offered_with_their_fields(stripe: ToolRegistry) -> None:
    # Then every operation of Stripe is a tool, the four whose 288-value category enums keep them over
    # maxSchemaBytes (16 KB) once trimmed offered reduced, and creating a customer offers the customer's fields
    assert len(stripe) == 355
    assert [note.split(" from ")[0] for note in stripe.notes] == [
        "reduced PostIssuingCardholders",
        "reduced PostIssuingCardholdersCardholder",
        "reduced PostIssuingCards",
        "reduced PostIssuingCardsCard",
    ]
    body = parameters_of(stripe, "PostCustomers")["properties"]["body"]
    assert {"email", "metadata", "expand", "address"} <= set(body["properties"])


def test_a_form_body_is_sent_form_encoded_with_nested_fields_in_brackets(
    stripe: ToolRegistry, real_api_server: ScriptableToolServer
) -> None:
    # Given Stripe's create-customer tool
    arguments = {
        "body": {
            "email": "ada@example.com",
            "metadata": {"order": "6735"},
            "expand": ["default_source"],
            "address": {"city": "Paris", "line1": "1 rue de Rivoli"},
            "tax_exempt": "none",
        }
    }
    # When the model calls it
    observation, sent = sent_by(real_api_server, stripe, "PostCustomers", **arguments)
    # Then one form-encoded POST went to the customers path, with the nested fields in brackets
    assert observation.ok
    assert (sent.method, sent.path) == ("POST", "/v1/customers")
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qsl(sent.body.decode("ascii")) == [
        ("email", "ada@example.com"),
        ("metadata[order]", "6735"),
        ("expand[0]", "default_source"),
        ("address[city]", "Paris"),
        ("address[line1]", "1 rue de Rivoli"),
        ("tax_exempt", "none"),
    ]


def test_query_parameters_are_sent_in_the_query(stripe: ToolRegistry, real_api_server: ScriptableToolServer) -> None:
    # When the model lists customers by email
    observation, sent = sent_by(real_api_server, stripe, "GetCustomers", email="ada@example.com", limit=3)
    # Then a GET with those query parameters and no body was sent
    assert observation.ok
    assert (sent.method, sent.path, sent.query, sent.body) == (
        "GET",
        "/v1/customers",
        {"email": ["ada@example.com"], "limit": ["3"]},
        b"",
    )


def test_a_json_body_is_sent_as_json(shopify: ToolRegistry, real_api_server: ScriptableToolServer) -> None:
    # Given a Shopify tool whose body is JSON
    name = next(name for name in shopify.names() if "body" in parameters_of(shopify, name)["properties"])
    (spec,) = shopify.specs([name])
    path_arguments = {key: "1" for key in spec.parameters.get("required", []) if key != "body"}
    # When the model calls it with a body
    observation, sent = sent_by(real_api_server, shopify, name, **path_arguments, body={"note": "hi"})
    # Then the body went as JSON
    assert observation.ok
    assert sent.headers["content-type"] == "application/json"
    assert json.loads(sent.body) == {"note": "hi"}


def test_an_openapi_3_1_document_with_multipart_bodies_imports_leaving_out_file_uploads(
    discord: ToolRegistry,
) -> None:
    # Then every operation is a tool but the three that need a file, each noted with its reason (those
    # whose schemas stay over maxSchemaBytes are offered reduced, see tests/unit/tools/test_tool_budget.py)
    import_notes = [note for note in discord.notes if note.startswith("openapi ")]
    assert len(discord) == 239
    assert sorted(note.split(": ")[1] for note in import_notes) == [
        "skipped operation create_guild_sticker",
        "skipped operation update_invite_target_users",
        "skipped operation upload_application_attachment",
    ]
    assert all("file field" in note for note in import_notes)


def test_a_multipart_body_sends_its_fields_as_parts(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given an operation whose multipart body has text fields and an optional file
    schema = {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "payload_json": {"type": "object", "properties": {"tts": {"type": "boolean"}}},
            "files[0]": {"type": "string", "contentEncoding": "binary"},
        },
    }
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/messages": {
                "post": {
                    "operationId": "create_message",
                    "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}},
                }
            }
        },
    }
    registry = import_source({"document": document, "baseUrl": tool_server.url, "internal": True})
    # Then the file field is not offered
    assert set(parameters_of(registry, "create_message")["properties"]["body"]["properties"]) == {
        "content",
        "payload_json",
    }
    # When the model calls it
    arguments = {"body": {"content": "hello", "payload_json": {"tts": False}}}
    assert ToolInvoker(registry).invoke(call("create_message", **arguments)).ok
    # Then the fields went as multipart parts, the object one as JSON
    (sent,) = tool_server.requests
    assert sent.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="content"\r\n\r\nhello\r\n' in sent.body
    assert b'name="payload_json"\r\n\r\n{"tts":false}\r\n' in sent.body


def test_closed_objects_keep_additional_properties_false_as_the_document_wrote_it(stripe: ToolRegistry) -> None:
    # Given Stripe's tools, whose bodies the document closes with additionalProperties: false
    specs = json.dumps([spec.parameters for spec in stripe.specs()])
    # Then every closed object says so with the literal false (what strict modes accept), none with a "not"
    assert '"additionalProperties": false' in specs
    assert '"not": {}' not in specs


def test_an_unexpected_body_field_is_named_with_the_fields_the_body_takes(
    stripe: ToolRegistry, real_api_server: ScriptableToolServer
) -> None:
    # Given Stripe's create-customer tool
    before = len(real_api_server.requests)
    # When the model sends a field the body does not have, and leaves out nothing required
    observation = ToolInvoker(stripe).invoke(call("PostCustomers", body={"email": "ada@example.com", "validate": True}))
    # Then nothing was sent, and the model is told which field is wrong and which ones there are
    assert len(real_api_server.requests) == before
    assert observation.error is not None
    assert "body: 'validate' is not a field of body; the fields are " in observation.error
    assert "email" in observation.error.split("the fields are ")[1]
