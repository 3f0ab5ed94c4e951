"""Invalid tool arguments described in words a model acts on: which field, and what to send instead.

jsonschema's own messages describe the schema ("Additional properties are not allowed", "... should
not be valid under {}"); a model corrects a call faster when told "'validate' is not a field of body;
its fields are email, name" or "the required field 'email' of body is missing". Other failures keep
jsonschema's message, which already names the value and the rule (``500 is greater than the maximum of 100``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepwise.patterns.schema_keywords import declared_property

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

MAX_LISTED_FIELDS = 20
MAX_ARGUMENT_ERROR_CHARS = 300


def describe_argument_error(error: ValidationError) -> str:
    """``where: what is wrong`` for one validation error of a tool call's arguments."""
    path = "/".join(str(part) for part in error.absolute_path)
    where = path or "arguments"
    message = _worded(error, path) or error.message
    if len(message) > MAX_ARGUMENT_ERROR_CHARS:
        message = f"{message[:MAX_ARGUMENT_ERROR_CHARS]}…"
    return f"{where}: {message}"


def _worded(error: ValidationError, path: str) -> str | None:
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    owner = f"of {path}" if path else "of this tool"
    kind = "field" if path else "argument"
    if error.validator == "additionalProperties" and error.validator_value is False and isinstance(instance, dict):
        unexpected = _unexpected(instance, schema)
        if unexpected:
            names = ", ".join(repr(name) for name in unexpected)
            if len(unexpected) == 1:
                return f"{names} is not {'an' if kind == 'argument' else 'a'} {kind} {owner}; {_known(schema, kind)}"
            return f"{names} are not {kind}s {owner}; {_known(schema, kind)}"
    if error.validator == "required" and isinstance(instance, dict):
        missing = next((name for name in error.validator_value if name not in instance), None)
        if missing is not None:
            return f"the required {kind} {missing!r} {owner} is missing"
    return None


def _unexpected(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    return [name for name in instance if not declared_property(name, schema)]


def _known(schema: dict[str, Any], kind: str) -> str:
    names = list(schema.get("properties") or {})
    if not names:
        return f"it takes no {kind}s"
    shown = ", ".join(names[:MAX_LISTED_FIELDS]) + (", …" if len(names) > MAX_LISTED_FIELDS else "")
    return f"the {kind}s are {shown}"
