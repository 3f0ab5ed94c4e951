"""What a schema's patterns must be: the metaschema's `format: regex` as RE2 and Python's `re` see it, and the
patterns a configuration or a caller gives, which RE2 must be able to run.

The metaschema holds `pattern` and `patternProperties`' names to `format: regex`, which jsonschema checks with
Python's `re.compile`; ECMA-262's `\\p{L}` fails there though RE2 runs it. `metaschema_formats` takes a pattern
either compiles.

A schema a configuration or a caller gives (a profile's or a request's `response_schema`, an eval's
`answer_schema`) is refused up front when RE2 cannot run one of its patterns (`unrunnable_pattern`): whoever
wrote it is there to rewrite it. A tool server's is not refused but not enforced (`schema_keywords`).
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.protocols import Validator

from stepwise.patterns.linear import PatternError, compiled

# Keywords whose values are data, not subschemas: a `pattern` key inside them is no pattern.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# One checker per draft, made on first use (two threads making one at once keep the first one made).
_FORMATS: dict[object, FormatChecker] = {}


def _is_pattern(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    try:
        re.compile(instance)  # compiling is not searching: no backtracking here
    except re.error:
        try:
            compiled(instance)
        except PatternError:
            return False
    return True


def metaschema_formats(validator_class: type[Validator]) -> FormatChecker:
    """`validator_class`'s formats, with `regex` any pattern Python's `re` or RE2 compiles."""
    formats = _FORMATS.get(validator_class)
    if formats is None:
        formats = FormatChecker(())
        formats.checkers = {**validator_class.FORMAT_CHECKER.checkers, "regex": (_is_pattern, ())}
        formats = _FORMATS.setdefault(validator_class, formats)
    return formats


TOOL_SCHEMA_FORMATS = metaschema_formats(Draft202012Validator)
"""The formats a tool's parameter schema is checked with against the 2020-12 metaschema."""


def unrunnable_pattern(schema: Any) -> str | None:
    """`<where>: <why>` for the first `pattern` or `patternProperties` pattern of `schema` that RE2 cannot
    run (`where` a JSON pointer), or None when RE2 runs them all."""
    pending: list[tuple[Any, str]] = [(schema, "")]
    while pending:
        node, where = pending.pop()
        if isinstance(node, list):
            pending.extend((item, f"{where}/{index}") for index, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            path = f"{where}/{key}"
            if key in _DATA_KEYWORDS:
                continue
            patterns = [(value, path)] if key == "pattern" and isinstance(value, str) else []
            if key == "patternProperties" and isinstance(value, dict):
                patterns = [(pattern, f"{path}/{pattern}") for pattern in value if isinstance(pattern, str)]
            for pattern, at in patterns:
                try:
                    compiled(pattern)
                except PatternError as exc:
                    return f"{at}: {exc.reason}"
            pending.append((value, path))
    return None
