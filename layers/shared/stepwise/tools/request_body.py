"""Request bodies of HTTP tools in the media type the endpoint takes: JSON, a form, or multipart fields.

Forms nest objects and arrays in the bracket style (OpenAPI ``deepObject``) that Stripe and most form
parsers read: ``{"metadata": {"order": "6735"}, "expand": ["customer"]}`` is sent as
``metadata[order]=6735&expand[0]=customer``. Multipart bodies carry one part per top-level field; an
object or array field is sent as JSON text (Discord's ``payload_json`` style).
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import urlencode

from urllib3 import encode_multipart_formdata

from stepwise.errors import ToolError

BodyEncoding = Literal["json", "form", "multipart"]


def encoded_body(value: Any, encoding: BodyEncoding) -> tuple[bytes, str]:
    """The body's bytes and its Content-Type; `ToolError` when a form body is not an object."""
    if encoding == "json":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), "application/json"
    if not isinstance(value, dict):
        raise ToolError(f"the request body must be an object of fields for a {encoding} body")
    if encoding == "form":
        return urlencode(form_pairs(value)).encode("ascii"), "application/x-www-form-urlencoded"
    fields = [(str(name), _part_text(field)) for name, field in value.items() if field is not None]
    body, content_type = encode_multipart_formdata(fields)
    return body, content_type


def form_pairs(value: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """The fields of a form body, objects and arrays flattened to ``name[key]`` and ``name[index]``."""
    pairs: list[tuple[str, str]] = []
    for key, item in value.items():
        name = f"{prefix}[{key}]" if prefix else str(key)
        pairs.extend(_pairs(name, item))
    return pairs


def _pairs(name: str, item: Any) -> list[tuple[str, str]]:
    if item is None:
        return []
    if isinstance(item, dict):
        return form_pairs(item, name)
    if isinstance(item, list):
        return [pair for index, element in enumerate(item) for pair in _pairs(f"{name}[{index}]", element)]
    return [(name, _scalar_text(item))]


def _scalar_text(item: Any) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    return str(item)


def _part_text(field: Any) -> str:
    if isinstance(field, dict | list):
        return json.dumps(field, separators=(",", ":"), ensure_ascii=False)
    return _scalar_text(field)
