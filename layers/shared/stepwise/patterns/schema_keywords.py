"""JSON Schema validators whose `pattern`, `patternProperties` and `additionalProperties` search with RE2.

A tool's parameter schema comes from an MCP server or an OpenAPI document, and a structured answer's from
a profile or a caller; the values checked against it are written by a model. jsonschema searches `pattern`
with Python's `re`, so `{"pattern": "(a+)+$"}` and an argument of forty `a` and a `!` would hold the step
until its timeout. These keywords search with RE2 instead (`stepwise.patterns.linear`).

A schema's pattern RE2 cannot run (a lookahead, a backreference: ECMA-262 has both) is not enforced, and
said once per pattern in the log: the server that wrote it checks its own arguments anyway, the model still
reads the pattern in the schema it is offered, and a tool should not become unusable because one of its
argument checks uses a construct this side cannot run in bounded time. An unenforced `patternProperties`
pattern applies its subschema to no property, and leaves no property to `additionalProperties` (either way,
the far side decides);
`unevaluatedProperties` beside `patternProperties` is not enforced (`linear_validator` says why).

For the same reason a tool schema is checked against its metaschema with `metaschema.TOOL_SCHEMA_FORMATS`,
which takes as a `format: regex` any pattern Python's `re` or RE2 compiles.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from jsonschema import FormatChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from stepwise.patterns.linear import LinearPattern, PatternError, compiled

# The extended classes, per draft and with or without `unevaluatedProperties`, made on first use (two
# threads making one at once keep the first one made).
_EXTENDED: dict[tuple[object, bool], type[Validator]] = {}


def linear_validator(
    schema: Any, validator_class: type[Validator], *, format_checker: FormatChecker | None = None
) -> Validator:
    """A `validator_class` (any draft's) validator of `schema` whose pattern keywords search in linear time.

    jsonschema's `unevaluatedProperties` searches `patternProperties`' patterns itself, with Python's `re`:
    in a schema holding both it is not enforced (said once per schema in the log), as a pattern RE2 cannot
    run is not. Schemas here are self-contained (a tool's `$defs` are inlined; no remote `$ref` is fetched).
    """
    both = _holds_key(schema, "patternProperties") and _holds_key(schema, "unevaluatedProperties")
    if both:
        _say_unevaluated_not_enforced(json.dumps(schema, sort_keys=True, default=str))
    extended = _EXTENDED.get((validator_class, both))
    if extended is None:
        keywords: dict[str, Any] = {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional,
        }
        if both:
            keywords["unevaluatedProperties"] = _not_enforced
        extended = _EXTENDED.setdefault((validator_class, both), validators.extend(validator_class, keywords))
    return extended(schema, format_checker=format_checker)


@functools.lru_cache(maxsize=4096)
def schema_pattern(pattern: str) -> LinearPattern | None:
    """`pattern` compiled for RE2, or None (said once in the log) when RE2 cannot run it."""
    try:
        return compiled(pattern)
    except PatternError as exc:
        # imported here: the configuration checks tool schemas with this module, and never logs from it
        from stepwise.telemetry.observability import logger

        logger.warning(
            "a schema's pattern is not enforced: RE2 cannot run it",
            extra={"pattern": pattern[:200], "reason": exc.reason},
        )
        return None


def _holds_key(schema: Any, key: str) -> bool:
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if key in node:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


@functools.lru_cache(maxsize=256)
def _say_unevaluated_not_enforced(schema_text: str) -> None:
    from stepwise.telemetry.observability import logger

    logger.warning(
        "a schema's unevaluatedProperties is not enforced beside patternProperties",
        extra={"schema": schema_text[:200]},
    )


def _not_enforced(validator: Validator, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    yield from ()


def _pattern(validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = schema_pattern(pattern)
    if found is not None and not found.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, pattern_properties: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        found = schema_pattern(pattern)
        for name, value in instance.items():
            if found is not None and found.search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional(
    validator: Validator, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = sorted(name for name in instance if not declared_property(name, schema))
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        names = ", ".join(repr(name) for name in extras)
        if "patternProperties" in schema:
            patterns = ", ".join(repr(pattern) for pattern in sorted(schema["patternProperties"]))
            yield ValidationError(
                f"{names} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: {patterns}"
            )
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def declared_property(name: str, schema: dict[str, Any]) -> bool:
    """Whether `properties` or a `patternProperties` pattern covers the property `name` (a pattern RE2
    cannot run covers every name: its check is the far side's)."""
    if name in (schema.get("properties") or {}):
        return True
    return any(
        (found := schema_pattern(pattern)) is None or found.search(name)
        for pattern in schema.get("patternProperties") or {}
    )
