"""The node-by-node metaschema check gives the verdict of jsonschema's own check on the whole schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from stepwise.config.schema_check import check_parameter_schema


def verdict(check: Any, schema: Any) -> str | None:
    """None when ``check`` accepts ``schema``, else the reason it gives."""
    try:
        check(schema)
    except SchemaError as exc:
        return exc.message
    return None


def nested(schema: Any) -> dict[str, Any]:
    """``schema`` three subschemas down, where only the node-by-node check could miss it."""
    return {
        "type": "object",
        "description": "a tool's arguments",
        "properties": {"body": {"type": "array", "items": {"allOf": [{"type": "object"}, schema]}}},
        "required": ["body"],
    }


SHARED = {"type": "object", "properties": {"login": {"type": "string", "description": "the user's handle"}}}

SCHEMAS = [
    pytest.param(nested({"type": "strin"}), id="an unknown type"),
    pytest.param(nested({"type": []}), id="an empty list of types"),
    pytest.param(nested({"type": ["string", "string"]}), id="a repeated type"),
    pytest.param(nested({"required": True}), id="OpenAPI 2 required flag"),
    pytest.param(nested({"required": ["a", "a"]}), id="a repeated required name"),
    pytest.param(nested({"required": ["a", 1]}), id="a required name that is not text"),
    pytest.param(nested({"pattern": "("}), id="a pattern that is no regex"),
    pytest.param(nested({"patternProperties": {"(": {}}}), id="a patternProperties name that is no regex"),
    pytest.param(nested({"minLength": -1}), id="a negative length"),
    pytest.param(nested({"enum": "open"}), id="an enum that is no list"),
    pytest.param(nested({"examples": "x"}), id="examples that are no list"),
    pytest.param(nested({"description": 5}), id="a description that is no text"),
    pytest.param(nested({"format": ["date"]}), id="a format that is no text"),
    pytest.param(nested({"anyOf": []}), id="an empty anyOf"),
    pytest.param(nested({"anyOf": [{"type": "null"}, 3]}), id="an anyOf member that is no schema"),
    pytest.param(nested({"properties": {"a": "string"}}), id="a property that is no schema"),
    pytest.param(nested({"properties": []}), id="properties that are no mapping"),
    pytest.param(nested({"items": [{"type": "string"}]}), id="draft-4 tuple items"),
    pytest.param(nested({"$defs": {"a": {"type": "nul"}}, "$ref": "#/$defs/a"}), id="a broken definition"),
    pytest.param(nested({"dependencies": {"a": {"type": "nul"}}}), id="a broken old-style dependency"),
    pytest.param(nested({"deprecated": "yes"}), id="a deprecated flag that is no boolean"),
    pytest.param(nested({"readOnly": 1}), id="a readOnly flag that is no boolean"),
    pytest.param([{"type": "object"}], id="a list where a schema should be"),
    pytest.param(
        nested(
            {
                "oneOf": [{"type": "null"}, {"type": "string", "enum": ["a", "b", None], "default": "a"}],
                "description": "accepted",
                "examples": [1, "x"],
                "const": {"any": "value"},
                "patternProperties": {"^x-": {"type": "string"}},
                "not": {"type": "integer"},
                "if": True,
                "then": False,
            }
        ),
        id="a valid schema using most keywords",
    ),
    pytest.param(nested({"x-extension": {"type": "nothing"}, "example": 3}), id="unknown keywords, valid"),
    pytest.param({"type": "object", "properties": {"author": SHARED, "committer": SHARED}}, id="a shared node"),
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_check_refuses_exactly_what_the_metaschema_refuses_for_the_same_reason(schema: Any) -> None:
    # When both checks judge the schema
    # Then they agree, and a refusal gives the same reason
    assert verdict(check_parameter_schema, schema) == verdict(Draft202012Validator.check_schema, schema)


def test_a_node_is_judged_by_its_own_keywords_not_by_a_cached_look_alike() -> None:
    # Given a valid node whose shape was checked (a string with a description)
    check_parameter_schema(nested({"type": "string", "description": "a name", "maxLength": 3}))
    # When a node of nearly the same shape but a broken value is checked
    broken = nested({"type": "string", "description": "a name", "maxLength": "3"})
    # Then it is refused
    assert verdict(check_parameter_schema, broken) == "'3' is not of type 'integer'"
