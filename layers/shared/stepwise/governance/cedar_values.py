"""A tool call's arguments as Cedar values, and their Cedar types, both read from the tool's JSON schema.

Cedar has no floating-point numbers and no null. An argument the JSON schema types `integer` is a Cedar
`Long`; one typed `number` is a `decimal` (four decimal places), whatever its value, so a policy compares
it with `decimal("100.0")`; an untyped number is a `Long` when it is whole, else a `decimal`. A null is
left out of its record, as an absent attribute. A value Cedar cannot hold (a `Long` out of range, a
`number` with more than four decimal places) raises `Unrepresentable`: a policy is never evaluated on a
value that is not the one the tool would receive.

The same reading gives the schema's types. What JSON schema says and Cedar cannot (a union of types,
`anyOf`, an array without `items`, an object without `properties`) is left out of the Cedar type: such an
argument is not typed, and a policy that reads it is not validated (`stepwise.governance.policy_check`).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# Cedar's decimal: four places, within the range of a Long divided by 10^4
_DECIMAL_PLACES = Decimal("0.0001")
_DECIMAL_LIMIT = Decimal(_LONG_MAX) / 10_000
_SCALARS = {"integer": "Long", "string": "String", "boolean": "Boolean"}


class Unrepresentable(ValueError):
    """An argument's value that Cedar cannot hold as the tool would receive it."""


def decimal_value(amount: float | int | Decimal, *, where: str) -> dict[str, Any]:
    """A Cedar `decimal` extension value (its JSON form) of `amount`, exactly; `Unrepresentable` otherwise."""
    try:
        exact = Decimal(str(amount)) if isinstance(amount, float) else Decimal(amount)
    except InvalidOperation:
        raise Unrepresentable(f"{where}: {amount!r} is not a number") from None
    if not exact.is_finite() or abs(exact) >= _DECIMAL_LIMIT or exact != exact.quantize(_DECIMAL_PLACES):
        raise Unrepresentable(f"{where}: {amount!r} is not a Cedar decimal (at most 4 decimal places)")
    return {"__extn": {"fn": "decimal", "arg": f"{exact.quantize(_DECIMAL_PLACES)}"}}


def _kind(schema: Any) -> str | None:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else None


def cedar_value(value: Any, schema: Any, *, where: str = "arguments") -> Any:
    """`value` (JSON) as Cedar's JSON form of it, typed as `schema` (a JSON schema, or None) says."""
    kind = _kind(schema)
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        whole = isinstance(value, int) or value.is_integer()
        if kind == "number" or not whole:
            return decimal_value(value, where=where)
        number = int(value)
        if not _LONG_MIN <= number <= _LONG_MAX:
            raise Unrepresentable(f"{where}: {value!r} is out of the range of a Cedar Long")
        return number
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        return [cedar_value(item, items, where=f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        properties = schema.get("properties") if isinstance(schema, dict) else None
        properties = properties if isinstance(properties, dict) else {}
        return {
            key: cedar_value(item, properties.get(key), where=f"{where}.{key}")
            for key, item in value.items()
            if item is not None
        }
    if value is None:
        raise Unrepresentable(f"{where}: null has no Cedar value")
    raise Unrepresentable(f"{where}: {type(value).__name__} has no Cedar value")


def cedar_type(schema: Any) -> dict[str, Any] | None:
    """The Cedar schema type (JSON form) of a JSON schema; None where Cedar cannot express it."""
    kind = _kind(schema)
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    if kind == "number":
        return {"type": "Extension", "name": "decimal"}
    if kind == "array":
        element = cedar_type(schema.get("items"))
        return {"type": "Set", "element": element} if element is not None else None
    if kind == "object" and isinstance(schema.get("properties"), dict):
        return record_type(schema)
    return None


def record_type(schema: dict[str, Any], *, optional: bool = False) -> dict[str, Any]:
    """The Cedar record type of an object schema: its expressible properties, required as JSON schema
    says (or none required, with `optional`)."""
    properties = schema.get("properties")
    required = set(schema.get("required") or []) if not optional else set()
    attributes: dict[str, Any] = {}
    for name, property_schema in (properties if isinstance(properties, dict) else {}).items():
        typed = cedar_type(property_schema)
        if typed is not None:
            attributes[name] = typed | {"required": name in required}
    return {"type": "Record", "attributes": attributes}


def untyped_arguments(schema: dict[str, Any]) -> list[str]:
    """The top-level arguments of a tool whose JSON schema Cedar cannot express (left out of its type)."""
    properties = schema.get("properties")
    return [
        name for name, each in (properties if isinstance(properties, dict) else {}).items() if cedar_type(each) is None
    ]
