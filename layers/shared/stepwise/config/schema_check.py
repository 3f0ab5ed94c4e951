"""Checking tool parameter schemas against the JSON Schema 2020-12 metaschema, fast enough for large APIs.

The metaschema checks a schema one node at a time: every subschema (under ``properties``, ``items``,
``allOf``...) is checked against the whole metaschema again, through ``$dynamicRef``, and nothing else
about a node depends on where it sits. So a schema is valid exactly when each of its nodes is valid with
its subschemas replaced by ``true``. Each node is checked that way, and the check of a node is
remembered by the node's *shape*: the node with every value whose validity the metaschema decides by
type alone (descriptions, examples, enum values, property names) reduced to a stand-in of that type.

Schemas imported from an API repeat the same few shapes thousands of times (an object of some
properties, a string with a description, an array of objects); Discord's 239 tools hold 20,000 nodes
but about 200 shapes, so the metaschema runs about 200 times instead of over a megabyte of schemas.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from stepwise.patterns.metaschema import TOOL_SCHEMA_FORMATS

# Keywords whose value is one subschema, a non-empty list of subschemas, or a mapping to subschemas
# (the applicator, unevaluated, content and core vocabularies, and the older `definitions`).
_SUBSCHEMA = frozenset(
    {"items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
_SUBSCHEMA_LISTS = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
# Property names of these mappings are not constrained; `patternProperties` names must be regexes.
_SUBSCHEMA_MAPS = frozenset({"properties", "dependentSchemas", "$defs", "definitions"})
# Keywords the metaschema holds to a type only: any string, any array, any value.
_ANY_STRING = frozenset({"description", "title", "$comment", "format", "contentEncoding", "contentMediaType"})
_ANY_ARRAY = frozenset({"enum", "examples"})
_ANY_VALUE = frozenset({"default", "const"})
_SHAPES_REMEMBERED = 16_384


def check_parameter_schema(schema: Any) -> None:
    """Raise `jsonschema.exceptions.SchemaError` when ``schema`` is not a valid JSON Schema 2020-12.

    The same verdict as ``Draft202012Validator.check_schema(schema)`` with a tool schema's formats
    (`TOOL_SCHEMA_FORMATS`: a pattern RE2 runs is a regex), checked node by node (see the module's
    docstring); a node shared by several parts of the schema is checked once.
    """
    # Ids are safe to remember here: every node stays alive inside `schema` during the check.
    seen: set[int] = set()
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, bool) or id(node) in seen:
            continue
        seen.add(id(node))
        if not isinstance(node, dict):
            # not a schema at all: the metaschema says why
            Draft202012Validator.check_schema(node, format_checker=TOOL_SCHEMA_FORMATS)
            continue
        shape = _shape(node, pending)
        try:
            text = json.dumps(shape, sort_keys=True)
        except (TypeError, ValueError):  # keys that are not all strings (YAML allows them): check it as it is
            Draft202012Validator.check_schema(shape, format_checker=TOOL_SCHEMA_FORMATS)
            continue
        _check_shape(text)


def _shape(node: dict[str, Any], pending: list[Any]) -> dict[str, Any]:
    """``node`` with its subschemas (queued on ``pending``) and type-only values replaced by stand-ins."""
    shape: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SUBSCHEMA and _is_schema(value):
            pending.append(value)
            shape[key] = True
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list) and all(_is_schema(item) for item in value):
            pending.extend(value)
            shape[key] = [True] if value else []  # the metaschema asks for at least one
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict) and all(_is_schema(item) for item in value.values()):
            pending.extend(value.values())
            shape[key] = {}
        elif key == "patternProperties" and isinstance(value, dict) and all(_is_schema(v) for v in value.values()):
            pending.extend(value.values())
            shape[key] = dict.fromkeys(value, True)
        elif key in _ANY_STRING and isinstance(value, str):
            shape[key] = ""
        elif (key in _ANY_ARRAY and isinstance(value, list)) or (key == "required" and _unique_strings(value)):
            shape[key] = []
        elif key not in _ANY_VALUE:
            shape[key] = value
    return shape


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict | bool)


def _unique_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value) and len(set(value)) == len(value)


@lru_cache(maxsize=_SHAPES_REMEMBERED)
def _check_shape(text: str) -> None:
    Draft202012Validator.check_schema(json.loads(text), format_checker=TOOL_SCHEMA_FORMATS)
