"""A JSON schema given as input (a request's or an eval case's response schema), checked against its metaschema."""

from __future__ import annotations

from typing import Any


def checked_json_schema(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`value` unchanged when it is a valid JSON schema (or None); a ValueError saying what is wrong otherwise."""
    if value is None:
        return value
    # only an input that carries a schema loads jsonschema
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(value).check_schema(value)
    except SchemaError as exc:
        raise ValueError(f"not a JSON schema: {exc.message}") from None
    return value
