"""Turning OpenAPI schemas into self-contained JSON Schema (draft 2020-12) that a model can read.

- Local ``$ref`` (``#/components/schemas/Pet``) are replaced by what they point to; a reference to a
  schema that is being expanded (a recursive schema) is cut to an empty schema that says so. References
  to other documents are refused.
- ``allOf`` members are merged into one object schema: properties together, ``required`` united, types
  intersected (a contradiction is a `ConfigError`).
- OpenAPI 3.0 dialect is rewritten: ``nullable: true`` adds ``null`` to the type, boolean
  ``exclusiveMinimum``/``exclusiveMaximum`` become numbers; ``discriminator``, ``xml``, ``externalDocs``,
  ``example`` and ``x-`` extensions are dropped.
- Properties marked ``readOnly`` are left out: they are never sent in a request.
- Keywords that name or find a place in the document (``$id``, ``$anchor``, ``$dynamicAnchor``,
  ``$recursiveAnchor``, ``$schema``, ``$vocabulary``) mean nothing once references are inlined and are
  dropped; a ``$dynamicRef`` or ``$recursiveRef`` (a schema referring back to one that encloses it, as
  OpenAI's ``CompoundFilter`` does) is cut as a recursive ``$ref`` is.
- Boolean subschemas (``additionalProperties: false``) are kept as booleans.

Sizes are bounded, so that a hostile document (YAML aliases can make a small file describe a huge
tree) cannot make the import spin.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from stepwise.errors import ConfigError

MAX_SCHEMA_NODES = 20_000
MAX_SCHEMA_DEPTH = 40

_DROPPED_KEYWORDS = frozenset(
    {"discriminator", "xml", "externalDocs", "example", "nullable", "$defs", "definitions"}
    # where a schema sits or what it is called: nothing once every reference is inlined
    | {"$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema", "$vocabulary"}
)
_BACK_REFERENCES = ("$dynamicRef", "$recursiveRef")
_SCHEMA_KEYWORDS = frozenset(
    {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "additionalItems"}
    | {"unevaluatedProperties", "unevaluatedItems"}
)
_SCHEMA_LIST_KEYWORDS = frozenset({"anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP_KEYWORDS = frozenset({"properties", "patternProperties", "dependentSchemas"})


def resolve_pointer(document: dict[str, Any], reference: str, *, where: str) -> Any:
    """What a local reference (``#/a/b~1c``) points to in ``document``; `ConfigError` otherwise."""
    if not reference.startswith("#"):
        raise ConfigError(f"{where}: $ref {reference!r} points outside the document, which is not supported")
    node: Any = document
    for raw in reference[1:].split("/")[1:]:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ConfigError(f"{where}: $ref {reference!r} points to nothing in the document")
    return node


def resolve_object(document: dict[str, Any], node: Any, *, where: str) -> Any:
    """Follow ``$ref`` of a non-schema object (a parameter, a request body, a path item) to its target."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        reference = node["$ref"]
        if reference in seen:
            raise ConfigError(f"{where}: $ref {reference!r} refers to itself")
        seen.add(reference)
        node = resolve_pointer(document, reference, where=where)
    return node


class SchemaNormaliser:
    """Normalises the schemas of one document; ``where`` prefixes every error (the operation)."""

    def __init__(self, document: dict[str, Any], *, where: str) -> None:
        self._document = document
        self._where = where
        self._nodes_left = MAX_SCHEMA_NODES

    def normalise(self, schema: Any) -> dict[str, Any]:
        """A self-contained JSON Schema equivalent to ``schema`` for a request."""
        return self._walk(schema, (), 0)

    def _walk(self, node: Any, expanding: tuple[str, ...], depth: int) -> dict[str, Any]:
        self._nodes_left -= 1
        if self._nodes_left < 0:
            raise ConfigError(f"{self._where}: the schemas are larger than {MAX_SCHEMA_NODES} nodes")
        if depth > MAX_SCHEMA_DEPTH:
            raise ConfigError(f"{self._where}: the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, bool):
            return {} if node else {"not": {}}
        if not isinstance(node, dict):
            raise ConfigError(f"{self._where}: a schema must be a mapping, not {type(node).__name__}")
        if isinstance(node.get("$ref"), str):
            return self._reference(node, expanding, depth)
        if any(isinstance(node.get(keyword), str) for keyword in _BACK_REFERENCES):
            # An enclosing schema, found by its anchor: being expanded, so cut as a recursive $ref is.
            cut = {"description": "(the enclosing schema again, which is not repeated)"}
            rest = {key: value for key, value in node.items() if key not in _BACK_REFERENCES}
            return merge_schemas(cut, self._walk(rest, expanding, depth + 1), where=self._where) if rest else cut
        if isinstance(node.get("allOf"), list):
            merged: dict[str, Any] = {}
            for member in node["allOf"]:
                merged = merge_schemas(merged, self._walk(member, expanding, depth + 1), where=self._where)
            # The schema's own keywords come last: its description is more specific than its members'.
            rest = {key: value for key, value in node.items() if key != "allOf"}
            return merge_schemas(merged, self._walk(rest, expanding, depth + 1), where=self._where)
        result: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED_KEYWORDS or key.startswith("x-"):
                continue
            result[key] = self._keyword(key, value, expanding, depth)
        _rewrite_exclusive_bounds(result)
        if node.get("nullable") is True:
            result = _nullable(result)
        return _without_read_only_properties(result)

    def _keyword(self, key: str, value: Any, expanding: tuple[str, ...], depth: int) -> Any:
        if key in _SCHEMA_KEYWORDS and isinstance(value, bool):
            # As the API wrote it: a model provider's strict mode takes only the literal
            # ``additionalProperties: false``, and validators name the unexpected field for it.
            return value
        if key in _SCHEMA_KEYWORDS and isinstance(value, dict):
            return self._walk(value, expanding, depth + 1)
        if key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            return [self._walk(item, expanding, depth + 1) for item in value]
        if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            return {name: self._walk(item, expanding, depth + 1) for name, item in value.items()}
        return value

    def _reference(self, node: dict[str, Any], expanding: tuple[str, ...], depth: int) -> dict[str, Any]:
        reference = node["$ref"]
        if reference in expanding:
            name = reference.rsplit("/", 1)[-1]
            return {"description": f"(a {name}, which contains itself; its schema is not repeated)"}
        target = resolve_pointer(self._document, reference, where=self._where)
        resolved = self._walk(target, (*expanding, reference), depth + 1)
        # OpenAPI 3.1 allows keywords beside $ref (a description, say); they refine the target.
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        if not siblings:
            return resolved
        return merge_schemas(resolved, self._walk(siblings, expanding, depth + 1), where=self._where)


def merge_schemas(first: dict[str, Any], second: dict[str, Any], *, where: str) -> dict[str, Any]:
    """The schema both ``first`` and ``second`` describe, as one mapping (the ``allOf`` merge)."""
    merged = dict(first)
    for key, value in second.items():
        if key not in merged:
            merged[key] = value
        elif key == "properties" and isinstance(value, dict):
            properties = dict(merged[key])
            for name, schema in value.items():
                known = properties.get(name)
                properties[name] = schema if known is None else merge_schemas(known, schema, where=where)
            merged[key] = properties
        elif key == "required" and isinstance(value, list):
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        elif key == "type":
            merged[key] = _intersect_types(merged[key], value, where=where)
        elif key == "enum" and isinstance(value, list):
            common = [item for item in merged[key] if item in value]
            if not common:
                raise ConfigError(f"{where}: allOf combines enums that have no value in common")
            merged[key] = common
        elif key in _SCHEMA_LIST_KEYWORDS and merged[key] != value:
            # Two members each with a oneOf: both must hold, which only allOf can say.
            merged.setdefault("allOf", []).append({key: value})
        else:
            merged[key] = value
    return merged


def _intersect_types(first: Any, second: Any, *, where: str) -> Any:
    first_types = [first] if isinstance(first, str) else list(first)
    second_types = [second] if isinstance(second, str) else list(second)
    common = [kind for kind in first_types if kind in second_types]
    if "integer" in first_types + second_types and "number" in first_types + second_types and not common:
        common = ["integer"]
    if not common:
        raise ConfigError(f"{where}: allOf combines type {first!r} with type {second!r}")
    return common[0] if len(common) == 1 else common


def _rewrite_exclusive_bounds(schema: dict[str, Any]) -> None:
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(exclusive)
        if not isinstance(flag, bool):
            continue
        del schema[exclusive]
        if flag and bound in schema:
            schema[exclusive] = schema.pop(bound)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
    elif isinstance(kind, list):
        schema = {**schema, "type": kind if "null" in kind else [*kind, "null"]}
    else:
        return {"anyOf": [schema, {"type": "null"}]}
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _without_read_only_properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    read_only = {name for name, item in properties.items() if isinstance(item, dict) and item.get("readOnly") is True}
    if not read_only:
        return schema
    schema = {**schema, "properties": {name: item for name, item in properties.items() if name not in read_only}}
    if isinstance(schema.get("required"), list):
        schema["required"] = [name for name in schema["required"] if name not in read_only]
        if not schema["required"]:
            del schema["required"]
    return schema
