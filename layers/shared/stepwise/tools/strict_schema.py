"""Tool schemas in the form strict function calling takes (OpenAI's ``strict: true``), and back.

A provider in strict mode makes the model's arguments match the schema as they are generated, but takes
only a subset of JSON Schema: every object closed (the literal ``additionalProperties: false``) with all
its properties required, an optional one written as nullable instead, and no ``allOf``, ``not``,
conditionals or pattern properties. `strict_form` writes a tool's schema that way when it can, keeping its
meaning: an object the schema leaves open (free-form ``metadata``) or a construct strict mode cannot say
makes it None, and the tool is offered without ``strict``. Constraints strict mode may not take (string
lengths, ``uniqueItems``) are left out of what the model is sent; the tool's own schema still checks them
when the call arrives.

`without_left_out_nulls` reads such arguments back: a null for a property the tool's own schema neither
requires nor lets be null is the model leaving it out.
"""

from __future__ import annotations

from typing import Any

MAX_STRICT_DEPTH = 10
MAX_STRICT_PROPERTIES = 5000
MAX_STRICT_ENUM_VALUES = 1000

# Keywords strict mode takes besides the structural ones handled below.
_KEPT = frozenset(
    {"type", "description", "title", "enum", "const", "pattern", "format", "minimum", "maximum"}
    | {"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems"}
)
# Keywords whose meaning strict mode cannot express: a schema using one is not offered as strict.
_UNSAYABLE = frozenset(
    {"allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependentRequired"}
    | {"unevaluatedProperties", "unevaluatedItems", "prefixItems", "contains", "propertyNames", "$ref"}
)


class _NotStrict(Exception):
    """The schema cannot be written in strict mode's subset."""


def strict_form(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` as strict function calling takes it, or None when strict mode cannot express it."""
    counts = {"properties": 0, "enum": 0}
    try:
        strict = _strict(schema, 0, counts)
    except _NotStrict:
        return None
    if strict.get("type") != "object" or counts["properties"] > MAX_STRICT_PROPERTIES:
        return None
    return strict if counts["enum"] <= MAX_STRICT_ENUM_VALUES else None


def _strict(node: Any, depth: int, counts: dict[str, int]) -> dict[str, Any]:
    if not isinstance(node, dict) or depth > MAX_STRICT_DEPTH or _UNSAYABLE & node.keys():
        raise _NotStrict
    result = {key: value for key, value in node.items() if key in _KEPT}
    if isinstance(node.get("enum"), list):
        counts["enum"] += len(node["enum"])
    members = node.get("anyOf", node.get("oneOf"))
    if isinstance(members, list):
        # oneOf's "exactly one" is checked on our side, against the tool's own schema
        result["anyOf"] = [_strict(member, depth + 1, counts) for member in members]
    if "items" in node:
        result["items"] = _strict(node["items"], depth + 1, counts)
    if _is_object(node):
        properties = node.get("properties")
        if node.get("additionalProperties", False) is not False or not isinstance(properties, dict) or not properties:
            raise _NotStrict
        counts["properties"] += len(properties)
        required = set(node.get("required") or ())
        result["properties"] = {
            name: _strict(child, depth + 1, counts)
            if name in required
            else _nullable(_strict(child, depth + 1, counts))
            for name, child in properties.items()
        }
        result["required"] = list(properties)
        result["additionalProperties"] = False
    if not result.keys() - {"description", "title"}:
        # an unconstrained value ({}) has no strict form
        raise _NotStrict
    return result


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if accepts_null(schema):
        return schema
    kind = schema.get("type")
    if kind in ("string", "number", "integer", "boolean") and "enum" not in schema and "const" not in schema:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def accepts_null(schema: Any) -> bool:
    """Whether ``schema`` lets a value be null (an unconstrained schema does)."""
    if not isinstance(schema, dict):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    members = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(members, list):
        return any(accepts_null(member) for member in members)
    if isinstance(schema.get("enum"), list):
        return None in schema["enum"]
    return kind is None and "const" not in schema and not _is_object(schema) and "items" not in schema


def without_left_out_nulls(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the nulls that stand for a left-out optional property (see the module docstring)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    required = set(schema.get("required") or ())
    kept: dict[str, Any] = {}
    for name, value in arguments.items():
        child = properties.get(name)
        if value is None and child is not None and name not in required and not accepts_null(child):
            continue
        if isinstance(value, dict) and isinstance(child, dict):
            value = without_left_out_nulls(value, child)
        kept[name] = value
    return kept
