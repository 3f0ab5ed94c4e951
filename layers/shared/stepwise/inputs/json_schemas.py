"""A JSON schema given as input (a request's or an eval case's response schema), checked against its metaschema
and refused when RE2 cannot run one of its patterns (`stepwise.patterns.metaschema`)."""

from __future__ import annotations

from typing import Any


def checked_json_schema(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`value` unchanged when it is a valid JSON schema (or None); a ValueError saying what is wrong otherwise."""
    if value is None:
        return value
    # only an input that carries a schema loads jsonschema
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    from stepwise.patterns.metaschema import metaschema_formats, unrunnable_pattern

    validator_class = validator_for(value)
    try:
        validator_class.check_schema(value, format_checker=metaschema_formats(validator_class))
    except SchemaError as exc:
        raise ValueError(f"not a JSON schema: {exc.message}") from None
    unrunnable = unrunnable_pattern(value)
    if unrunnable is not None:
        raise ValueError(f"a pattern at {unrunnable}")
    return value
