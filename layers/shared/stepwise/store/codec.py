"""Conversion between Python values and DynamoDB attribute values.

Floats become Decimals on the way in (DynamoDB has no binary float) and come back as int when whole.
Strings are cleaned by the text policy on the way in: every boundary already refuses or repairs text
that cannot be encoded, and this is the defence in depth that keeps a write from ever failing on content
(a lone surrogate has no UTF-8 form, and DynamoDB's answer to one is an error retried for seconds).
Known secrets are redacted from them too (`redact_known_secrets`), in every encoding the redactors know:
each boundary redacts what it lets in, and this makes sure no stored item ever holds one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from stepwise.config.redaction import redact_known_secrets
from stepwise.inputs.text_policy import clean_text

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return redact_known_secrets(clean_text(value))
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {clean_text(str(key)): _to_dynamo(item) for key, item in value.items() if item is not None}
    if isinstance(value, list | tuple):
        return [_to_dynamo(item) for item in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _from_dynamo(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(item) for item in value]
    return value


def serialize_value(value: Any) -> dict[str, Any]:
    """One Python value as an attribute value."""
    return cast(dict[str, Any], _serializer.serialize(_to_dynamo(value)))


def serialize_item(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Python dict as a DynamoDB item; `None` fields are left out rather than stored as NULL."""
    return {key: serialize_value(value) for key, value in item.items() if value is not None}


def deserialize_item(item: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A DynamoDB item as a Python dict with plain ints and floats."""
    return {key: _from_dynamo(_deserializer.deserialize(cast(Any, value))) for key, value in item.items()}
