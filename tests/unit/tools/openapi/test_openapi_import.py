"""Importing three real-world-shaped OpenAPI documents: the tool names and schemas the model will see."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.tool_sources import OpenApiSourceConfig
from stepwise.errors import ConfigError
from stepwise.tools.openapi import DocumentLoader, openapi_api_config
from tests.unit.tools.openapi.conftest import FIXTURES, ImportSource, specs_by_name

PETSTORE = {"source": "petstore-3.0.yaml", "exclude": {"operations": ["uploadPhoto"]}}
TRACKER = {"source": "issue-tracker-3.1.json"}
WEATHER = {"source": "weather-3.1.yaml", "baseUrl": "https://api.weather.example.com/v3"}


def api_url(entry: dict[str, Any]) -> str:
    """The base URL an ``openapi:`` entry resolves to."""
    source = OpenApiSourceConfig.model_validate(entry)
    return openapi_api_config(source, DocumentLoader(config_dir=FIXTURES).load(source)).api.url


def test_petstore_operations_are_named_by_operation_id_or_by_method_and_path(import_source: ImportSource) -> None:
    # Given the pet store (3.0) without its multipart upload
    # When it is imported
    names = list(specs_by_name(import_source(PETSTORE)))
    # Then every other operation is a tool, in document order; DELETE has no operationId
    assert names == ["listPets", "addPet", "showPetById", "updatePet", "delete_pets_petId", "placeOrder"]


def test_a_request_body_by_ref_with_all_of_becomes_one_body_argument_without_read_only_fields(
    import_source: ImportSource,
) -> None:
    # Given addPet, whose body is a $ref to a requestBody whose schema is allOf(PetBase, {owner})
    # When it is imported
    parameters = specs_by_name(import_source(PETSTORE))["addPet"].parameters
    # Then the body is one merged object: readOnly id left out, nullable tag, owner resolved, no extensions
    assert parameters == {
        "type": "object",
        "properties": {
            "body": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "tag": {"type": ["string", "null"]},
                    "owner": {
                        "type": "object",
                        "required": ["email"],
                        "properties": {
                            "email": {"type": "string", "format": "email"},
                            "phone": {"type": ["string", "null"]},
                        },
                    },
                },
                "description": "A pet as a client sends it.",
            }
        },
        "additionalProperties": False,
        "required": ["body"],
    }


def test_query_and_header_parameters_keep_their_schemas_and_descriptions(import_source: ImportSource) -> None:
    # Given listPets, with a bounded integer, an array of enums and a header parameter by $ref
    # When it is imported
    properties = specs_by_name(import_source(PETSTORE))["listPets"].parameters["properties"]
    # Then each parameter is an argument of the same name with its schema and description
    assert properties == {
        "limit": {
            "type": "integer",
            "format": "int32",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
            "description": "How many pets to return (at most 100).",
        },
        "status": {
            "type": "array",
            "items": {"type": "string", "enum": ["available", "pending", "sold"]},
            "description": "Only pets with these statuses.",
        },
        "X-Request-ID": {
            "type": "string",
            "format": "uuid",
            "description": "Correlates the request in the store's logs.",
        },
    }


def test_path_level_parameters_apply_to_every_operation_of_the_path(import_source: ImportSource) -> None:
    # Given /pets/{petId}, which declares petId once for its GET, PUT and DELETE
    # When it is imported
    specs = specs_by_name(import_source(PETSTORE))
    # Then each of the three operations requires petId
    assert [specs[name].parameters["required"][0] for name in ("showPetById", "updatePet", "delete_pets_petId")] == [
        "petId"
    ] * 3


def test_openapi_3_0_bounds_are_rewritten_as_json_schema_2020_12(import_source: ImportSource) -> None:
    # Given an order whose quantity has the 3.0 form `maximum: 10, exclusiveMaximum: true`
    # When it is imported
    body = specs_by_name(import_source(PETSTORE))["placeOrder"].parameters["properties"]["body"]
    # Then the bound is the 2020-12 form, and the example is gone
    assert body["properties"]["quantity"] == {"type": "integer", "minimum": 1, "exclusiveMaximum": 10}
    assert body["properties"]["shipDate"] == {"type": "string", "format": "date-time"}


def test_descriptions_join_summary_and_description_and_mark_deprecated_operations(import_source: ImportSource) -> None:
    # Given operations with a summary and a description, and a deprecated one
    # When they are imported
    specs = specs_by_name(import_source(PETSTORE))
    # Then both texts are kept, and deprecation is said first
    assert specs["updatePet"].description == "Update a pet\nReplaces the pet's name, tag and owner."
    assert specs["delete_pets_petId"].description == "(deprecated) Delete a pet"


def test_the_base_url_is_the_first_of_several_servers() -> None:
    # Given the pet store, which lists production then staging
    # When its API configuration is made
    # Then the first server is the base URL
    assert api_url(PETSTORE) == "https://petstore.example.com/v2"


def test_server_variables_take_their_default_values() -> None:
    # Given the tracker's server https://{region}.tracker.example.com/api/v{version}
    # When its API configuration is made
    # Then the variables' defaults fill the URL
    assert api_url(TRACKER) == "https://eu.tracker.example.com/api/v3"


def test_base_url_overrides_the_servers_of_the_document() -> None:
    # Given the pet store with a baseUrl
    # When its API configuration is made
    # Then the configured base URL is used
    assert (
        api_url({**PETSTORE, "baseUrl": "https://pets.internal.example.com/api/"})
        == "https://pets.internal.example.com/api"
    )


def test_operation_ids_with_characters_a_model_refuses_are_sanitised(import_source: ImportSource) -> None:
    # Given the tracker (3.1), whose operationIds look like "issues/list-for-repo"
    # When it is imported
    names = list(specs_by_name(import_source(TRACKER)))
    # Then the slashes became underscores and the rest is kept
    assert names == ["issues_list-for-repo", "issues_create", "issues_update", "issues_create-comment", "admin_reindex"]


def test_nested_path_parameters_by_ref_are_all_required_in_path_order(import_source: ImportSource) -> None:
    # Given a comment endpoint under /repos/{owner}/{repo}/issues/{issue_number}
    # When it is imported
    parameters = specs_by_name(import_source(TRACKER))["issues_create-comment"].parameters
    # Then the three path parameters and the body are required
    assert parameters["required"] == ["owner", "repo", "issue_number", "body"]
    assert parameters["properties"]["issue_number"] == {
        "type": "integer",
        "description": "The number that identifies the issue.",
    }


def test_a_recursive_schema_is_expanded_once_and_then_cut(import_source: ImportSource) -> None:
    # Given a comment schema whose replies are comments
    # When it is imported
    body = specs_by_name(import_source(TRACKER))["issues_create-comment"].parameters["properties"]["body"]
    # Then the replies' items say what they are instead of repeating the schema forever
    assert body["properties"]["replies"]["items"] == {
        "description": "(a comment, which contains itself; its schema is not repeated)"
    }


def test_openapi_3_1_type_lists_and_ref_siblings_are_kept(import_source: ImportSource) -> None:
    # Given a 3.1 body with a type list and a $ref beside a description
    # When it is imported
    body = specs_by_name(import_source(TRACKER))["issues_update"].parameters["properties"]["body"]
    # Then the type list is as written and the description refines the referenced schema
    assert body["properties"]["title"] == {"type": ["string", "integer", "null"]}
    assert body["properties"]["milestone"] == {
        "type": ["integer", "null"],
        "description": "The milestone to associate, or null.",
    }


def test_a_query_parameter_name_a_model_refuses_becomes_a_safe_argument_name(import_source: ImportSource) -> None:
    # Given a query parameter called "page[number]"
    # When it is imported
    properties = specs_by_name(import_source(TRACKER))["issues_list-for-repo"].parameters["properties"]
    # Then the argument is page_number
    assert "page_number" in properties
    assert "page[number]" not in properties


def test_operations_can_be_included_by_tag_and_excluded_by_operation_id(import_source: ImportSource) -> None:
    # Given the tracker with only the issues tag, minus one operation
    entry = {**TRACKER, "include": {"tags": ["issues"]}, "exclude": {"operations": ["issues/update"]}}
    # When it is imported
    names = list(specs_by_name(import_source(entry)))
    # Then the admin and comment operations and the excluded one are not offered
    assert names == ["issues_list-for-repo", "issues_create"]


def test_operations_can_be_included_by_generated_tool_name(import_source: ImportSource) -> None:
    # Given the weather API, including its operation without an operationId by its tool name
    entry = {**WEATHER, "include": {"operations": ["get_weather_daily_json", "placeDetails"]}}
    # When it is imported
    names = list(specs_by_name(import_source(entry)))
    # Then those two are the tools
    assert names == ["get_weather_daily_json", "placeDetails"]


def test_a_relative_server_url_needs_a_base_url_when_the_document_is_a_file(import_source: ImportSource) -> None:
    # Given the weather API, whose only server is "/v3", read from a file without baseUrl
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source({"source": "weather-3.1.yaml"})
    # Then the error names the source, the relative URL, and the fix
    assert str(error.value) == "openapi weather-3.1.yaml: servers[0].url '/v3' is relative; set baseUrl"


def test_enums_and_defaults_survive_and_the_authorization_header_parameter_is_ignored(
    import_source: ImportSource,
) -> None:
    # Given get_weather_now, which declares an Authorization header (the spec says to ignore it)
    # When it is imported
    parameters = specs_by_name(import_source(WEATHER))["get_weather_now"].parameters
    # Then the model sees the query parameters and Accept-Language, but not Authorization
    assert list(parameters["properties"]) == ["location", "language", "unit", "Accept-Language"]
    assert parameters["properties"]["unit"]["enum"] == ["c", "f"]
    assert parameters["properties"]["language"]["default"] == "zh-Hans"
    assert parameters["required"] == ["location", "language", "unit"]


def test_a_parameter_the_configured_api_key_supplies_is_not_offered_to_the_model(import_source: ImportSource) -> None:
    # Given the daily forecast, which declares the query key as a required parameter
    key = {"in": "query", "name": "key", "value": "ssm:/weather/key"}
    # When it is imported without and with the key configured
    without_key = specs_by_name(import_source(WEATHER))["get_weather_daily_json"].parameters
    with_key = specs_by_name(import_source({**WEATHER, "apiKey": key}))["get_weather_daily_json"].parameters
    # Then the model is asked for the key only when the configuration does not supply it
    assert without_key["required"] == ["location", "key"]
    assert (list(with_key["properties"]), with_key["required"]) == (["location", "days"], ["location"])


def test_an_array_request_body_stays_an_array_under_body(import_source: ImportSource) -> None:
    # Given subscribeAlerts, whose body is an array of subscriptions
    # When it is imported
    body = specs_by_name(import_source(WEATHER))["subscribeAlerts"].parameters["properties"]["body"]
    # Then body is that array, its items resolved
    assert body["type"] == "array"
    assert body["minItems"] == 1
    assert body["items"]["required"] == ["location", "severity"]


def test_a_hyphenated_path_parameter_keeps_its_name(import_source: ImportSource) -> None:
    # Given /places/{place-id}
    # When it is imported
    parameters = specs_by_name(import_source(WEATHER))["placeDetails"].parameters
    # Then the argument is place-id, required
    assert parameters["required"] == ["place-id"]
