"""Tool schemas held to a size: trimmed, annotations first, then reduced; never left out.

A tool's spec (name, description, JSON-schema parameters) is sent to the model on every call. Imported
APIs carry schemas of 50 to 200 KB (Discord's), which cost tokens on every request and can pass what a
provider accepts. A spec over ``max_bytes`` (serialized as compact JSON, UTF-8) is trimmed in a fixed
order, stopping as soon as it fits:

1. the ``description`` and ``title`` of nested schemas, deepest level first, down to the properties of
   the arguments' own properties;
2. ``examples``, ``example`` and ``default``, everywhere in the schema;
3. the ``description`` and ``title`` of the top-level arguments, and of the parameters schema itself;
4. the tool's own description, cut to its first sentence (at most `SHORT_DESCRIPTION_CHARS`).

Each of these is an annotation: removing it never changes which arguments validate, so the trimmed spec
also serves the invoker's argument check.

A spec still over the limit is offered **reduced** (`reduce_spec`): every optional field, at every depth,
is shown by its name only (an empty schema, ``{}``), the required ones whole; if that is still too
large, the schemas below a depth become ``{}`` too, the deepest first, down to the argument names alone.
Its description says so and how to get the rest: `find_tools` with ``tool`` set to its name offers the
**full schema** (the spec trimmed of its annotations) from the model's next step on. Calls are checked
against the full schema (`checked_spec`), so a reduced spec never lets a wrong argument through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from stepwise.models.messages import ToolSpec
from stepwise.tools.base import NO_CONTEXT, CallContext, Tool, ToolResult

SHORT_DESCRIPTION_CHARS = 200
_DESCRIPTIONS = ("description", "title")
_EXAMPLES = ("examples", "example", "default")
# Keywords whose value is a schema, a list of schemas, or a map of name to schema (JSON Schema 2020-12
# and the older `definitions`/`items` forms). Only these are walked, so a property *named* "description"
# (Stripe has many) is never taken for the annotation.
_SCHEMA_KEYWORDS = (
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Kept (reduced) when a schema is reduced, with `properties` and `patternProperties`; the other subschema
# keywords (not, if, propertyNames...) only restrict what validates and are dropped with the rest.
_KEPT_SCHEMA_KEYWORDS = ("items", "additionalProperties")
# A reference into the `$defs` a reduced schema no longer carries (an MCP tool's schema may have them).
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
REDUCED_NOTE = (
    " Its schema is reduced to fit: a field shown as {{}} is described in the full schema, which "
    'find_tools offers when called with tool="{name}".'
)


def spec_bytes(spec: ToolSpec) -> int:
    """The size of the spec as it is sent: compact JSON, UTF-8."""
    return len(json.dumps(spec.model_dump(), separators=(",", ":"), ensure_ascii=False).encode())


@dataclass(frozen=True)
class Budgeted:
    """A spec held to the limit: the spec to offer, what was done to it, and, when it is offered reduced,
    the full spec (trimmed of its annotations) that calls are checked against and the model may ask for."""

    spec: ToolSpec
    original_bytes: int
    final_bytes: int
    removed: tuple[str, ...] = ()
    full: ToolSpec | None = None

    @property
    def note(self) -> str | None:
        """One line saying what was trimmed or reduced; None if the spec fit as it was."""
        if not self.removed:
            return None
        removed = ", ".join(self.removed)
        if self.full is not None:
            return (
                f"reduced {self.spec.name} from {self.original_bytes} to {self.final_bytes} bytes "
                f"({spec_bytes(self.full)} after trimming, over the limit): removed {removed}; "
                f"find_tools offers its full schema on request"
            )
        return f"trimmed {self.spec.name} from {self.original_bytes} to {self.final_bytes} bytes: removed {removed}"


def fit_spec(spec: ToolSpec, max_bytes: int) -> Budgeted:
    """``spec`` trimmed to at most ``max_bytes`` in the documented order, else reduced (`reduce_spec`)."""
    original = spec_bytes(spec)
    if original <= max_bytes:
        return Budgeted(spec, original, original)
    parameters = json.loads(json.dumps(spec.parameters))  # a deep copy we may change
    removed: list[str] = []
    current = spec
    for label, trim in _trimming_steps(parameters, spec.description):
        parameters, description = trim()
        current = spec.model_copy(update={"parameters": parameters, "description": description})
        removed.append(label)
        size = spec_bytes(current)
        if size <= max_bytes:
            return Budgeted(current, original, size, tuple(removed))
    reduced, how = reduce_spec(current, max_bytes)
    return Budgeted(reduced, original, spec_bytes(reduced), (*removed, how), full=current)


def _trimming_steps(parameters: dict[str, Any], description: str) -> Iterator[tuple[str, Any]]:
    """The trimming steps in order, each a label and a function returning (parameters, description).

    The schemas are found, by depth, once: trimming removes annotations, never a schema, so each step
    looks at and strips only its own depths instead of walking the whole tree again (a deep schema of
    tens of thousands of nodes, as Discord's, would otherwise be walked once per depth and per step).
    """
    by_depth: dict[int, list[dict[str, Any]]] = {}
    for depth, schema in _schemas(parameters, 0):
        by_depth.setdefault(depth, []).append(schema)
    every_schema = [schema for schemas in by_depth.values() for schema in schemas]
    for level in range(max(by_depth, default=0), 1, -1):
        if _has_annotation(by_depth[level], _DESCRIPTIONS):
            yield (
                f"descriptions at depth {level}",
                lambda level=level: (_strip(parameters, by_depth[level], _DESCRIPTIONS), description),
            )
    if _has_annotation(every_schema, _EXAMPLES):
        yield "examples and defaults", lambda: (_strip(parameters, every_schema, _EXAMPLES), description)
    arguments = by_depth.get(0, []) + by_depth.get(1, [])
    if _has_annotation(arguments, _DESCRIPTIONS):
        yield "argument descriptions", lambda: (_strip(parameters, arguments, _DESCRIPTIONS), description)
    short = shorten_description(description)
    if short != description:
        yield "the tool description's detail", lambda: (parameters, short)


def shorten_description(text: str) -> str:
    """The first sentence (or line) of ``text``, at most `SHORT_DESCRIPTION_CHARS` characters."""
    first = _SENTENCE_END.split(text.strip(), maxsplit=1)[0].split("\n", 1)[0].strip()
    if len(first) > SHORT_DESCRIPTION_CHARS:
        first = first[: SHORT_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return first


def reduce_spec(spec: ToolSpec, max_bytes: int) -> tuple[ToolSpec, str]:
    """``spec`` reduced to fit ``max_bytes`` (see the module docstring), and what the reduction removed.

    The reduced spec accepts every argument the full one does (only constraints are dropped), so a
    provider's own schema check never refuses a call the full schema allows.
    """
    note = REDUCED_NOTE.format(name=spec.name)
    description = shorten_description(spec.description) + note

    def reduced(keep: int) -> ToolSpec:
        return spec.model_copy(update={"parameters": _reduced(spec.parameters, 0, keep), "description": description})

    deepest = _deepest(spec.parameters, 0)
    if spec_bytes(whole := reduced(deepest)) <= max_bytes:
        return whole, "the schemas of optional fields"
    low, high = -1, deepest - 1  # the largest depth kept that fits lies in [low, high]; -1: none fits
    while low < high:
        middle = (low + high + 1) // 2
        if spec_bytes(reduced(middle)) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    if low >= 0:
        return reduced(low), f"the schemas of optional fields and every schema below depth {low}"
    bare = spec.model_copy(update={"parameters": {"type": "object"}, "description": description})
    return bare, "every argument's schema and name"


def _deepest(node: Any, depth: int) -> int:
    """The depth of the deepest schema under ``node`` (``depth``'s own); a plain walk, as `_schemas`' nested
    generators cost a step per level for every schema they yield."""
    if not isinstance(node, dict):
        return depth - 1
    children: list[Any] = [node.get(keyword) for keyword in _SCHEMA_KEYWORDS]
    for keyword in _SCHEMA_LISTS:
        if isinstance(node.get(keyword), list):
            children += node[keyword]
    for keyword in _SCHEMA_MAPS:
        if isinstance(node.get(keyword), dict):
            children += node[keyword].values()
    return max([depth, *(_deepest(child, depth + 1) for child in children)])


def _reduced(node: Any, depth: int, keep: int) -> Any:
    """``node`` with the schemas of optional properties, and every schema deeper than ``keep``, made ``{}``."""
    if not isinstance(node, dict) or depth > keep:
        return {} if isinstance(node, dict) else node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            required = set(node.get("required") or ())
            result[key] = {
                name: _reduced(child, depth + 1, keep) if name in required else {} for name, child in value.items()
            }
        elif key == "patternProperties" and isinstance(value, dict):
            # kept by name, or `additionalProperties: false` beside them would refuse what they allow
            result[key] = {pattern: {} for pattern in value}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            result[key] = [_reduced(child, depth + 1, keep) for child in value]
        elif key in _KEPT_SCHEMA_KEYWORDS:
            result[key] = _reduced(value, depth + 1, keep)
        elif key not in _SCHEMA_KEYWORDS and key not in _SCHEMA_MAPS and key not in _REFERENCES:
            # a constraint or annotation of this schema itself (type, enum, required, format...)
            result[key] = value
    return result


def _schemas(node: Any, depth: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every schema object under ``node`` with its depth (the parameters schema is 0, its properties 1)."""
    if not isinstance(node, dict):
        return
    yield depth, node
    for keyword in _SCHEMA_KEYWORDS:
        yield from _schemas(node.get(keyword), depth + 1)
    for keyword in _SCHEMA_LISTS:
        children = node.get(keyword)
        if isinstance(children, list):
            for child in children:
                yield from _schemas(child, depth + 1)
    for keyword in _SCHEMA_MAPS:
        children = node.get(keyword)
        if isinstance(children, dict):
            for child in children.values():
                yield from _schemas(child, depth + 1)


def _has_annotation(schemas: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> bool:
    return any(key in schema for schema in schemas for key in keys)


def _strip(parameters: dict[str, Any], schemas: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """Remove ``keys`` from ``schemas`` (nodes of ``parameters``), in place; returns ``parameters``."""
    for schema in schemas:
        for key in keys:
            schema.pop(key, None)
    return parameters


class BudgetedTool:
    """A tool offered with a trimmed or reduced spec; calls go to the tool as it was.

    ``full_spec`` is the spec arguments are checked against: the trimmed spec itself, or, for a reduced
    one, the full spec it was reduced from.
    """

    def __init__(self, tool: Tool, spec: ToolSpec, full_spec: ToolSpec | None = None) -> None:
        self._tool = tool
        self._spec = spec
        self.full_spec = full_spec if full_spec is not None else spec

    @property
    def spec(self) -> ToolSpec:
        """The spec offered to the model."""
        return self._spec

    @property
    def reduced(self) -> bool:
        """True when the spec offered is reduced (its full schema is offered on request)."""
        return self.full_spec is not self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Run the original tool."""
        return self._tool.call(arguments, context)


def checked_spec(tool: Tool) -> ToolSpec:
    """The spec a call's arguments are checked against: the full one of a reduced tool, else the offered one."""
    return tool.full_spec if isinstance(tool, BudgetedTool) else tool.spec


def held_to_budget(tools: Iterable[Tool], max_bytes: int) -> tuple[list[Tool], list[str]]:
    """Every tool, its spec within ``max_bytes`` (trimmed or reduced where needed), and one note per tool changed."""
    kept: list[Tool] = []
    notes: list[str] = []
    for tool in tools:
        fitted = fit_spec(tool.spec, max_bytes)
        if fitted.note is None:
            kept.append(tool)
            continue
        notes.append(fitted.note)
        kept.append(BudgetedTool(tool, fitted.spec, fitted.full))
    return kept, notes
