"""Path, query, header and cookie parameters serialized as OpenAPI 3.0/3.1 says (``style``, ``explode``).

Every style of the specification's table is written here: ``simple``, ``label`` and ``matrix`` in the
path; ``form``, ``spaceDelimited``, ``pipeDelimited`` and ``deepObject`` in the query; ``simple`` in
headers; ``form`` in cookies. Each item is percent-encoded on its own and the style's delimiters are
written literally, so a ``,`` inside a value (``%2C``) is never taken for one between values. An
``allowReserved`` query parameter keeps RFC 3986's reserved characters as they are, except the four
that would change the query's own structure (``&``, ``=``, ``#``, ``+``).

``deepObject`` is OpenAPI's ``name[field]=value`` for an object; the specification leaves arrays and
nested objects undefined, and the APIs that use it (Stripe) read them in the bracket convention their
form bodies use too: ``expand[0]=customer``, ``created[gt]=1``, ``a[b][c]=1`` (`form_pairs`).

Written by hand, because no maintained library serializes parameters by style on the client side:
RFC 6570 template libraries (``uritemplate``) cover ``simple``, ``label``, ``matrix`` and ``form`` but
sort an object's members, accept only RFC 6570 variable names (``X-Rate-Limit`` and ``created[gt]``
are not) and have no ``spaceDelimited``, ``pipeDelimited`` or ``deepObject``; ``openapi-core`` reads
parameters on the server side (the tests use it as the judge of what this module writes); ``aiopenapi3``,
a client that does serialize by style, does it through its own parsed schema model, joins a value's
items before they are encoded (so a comma inside an item reads as a delimiter) and refuses
``deepObject`` arrays and nesting, which Stripe needs.
The query string is built here too, because httpx's ``params`` would percent-encode the delimiters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from stepwise.config.http_api import ArgumentBinding
from stepwise.errors import ToolError
from stepwise.tools.request_body import form_pairs

# RFC 3986 reserved characters an allowReserved value keeps, less those that delimit the query itself.
_RESERVED_KEPT = ":/?[]@!$'()*,;"
# RFC 6265 cookie-octets exclude these (and controls, non-ASCII and space, which quote() encodes).
_UNSENDABLE = ("\r", "\n", "\0")


def scalar_text(value: object) -> str:
    """A primitive as OpenAPI writes it (``true``, ``3``); an object or array nested in one as JSON text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _encoded(text: str, *, allow_reserved: bool = False) -> str:
    return quote(text, safe=_RESERVED_KEPT if allow_reserved else "")


def _members(value: Any) -> list[tuple[str, str]]:
    """An object's fields as (name, text), in order; absent (None) fields are left out."""
    return [(str(key), scalar_text(item)) for key, item in value.items() if item is not None]


def _items(value: list[Any]) -> list[str]:
    return [scalar_text(item) for item in value if item is not None]


def path_value(name: str, value: Any, binding: ArgumentBinding | None) -> str:
    """The text that replaces ``{name}`` in the path (``simple``, ``label`` or ``matrix``), encoded.

    A ``multi_segment`` (GitHub's ``x-multi-segment``) string keeps its ``/`` between encoded segments.
    """
    style = binding.effective_style if binding is not None else "simple"
    explode = binding is not None and binding.effective_explode
    if isinstance(value, str) and binding is not None and binding.multi_segment:
        return "/".join(_encoded(segment) for segment in value.split("/"))
    # what starts the value, and what parts an exploded value ("simple" joins with commas either way)
    prefix = {"simple": "", "label": ".", "matrix": ";"}[style]
    between = {"simple": ",", "label": ".", "matrix": ";"}[style] if explode else ","
    label = f"{_encoded(name)}=" if style == "matrix" else ""
    if isinstance(value, list):
        items = [_encoded(item) for item in _items(value)]
        if style == "matrix" and explode:
            return "".join(f";{label}{item}" for item in items)
        return prefix + label + between.join(items)
    if isinstance(value, dict):
        members = [(_encoded(key), _encoded(text)) for key, text in _members(value)]
        if explode:
            return prefix + between.join(f"{key}={text}" for key, text in members)
        return prefix + label + ",".join(part for member in members for part in member)
    text = _encoded(scalar_text(value))
    if style == "matrix" and not text:
        return f";{_encoded(name)}"
    return prefix + label + text


def query_pairs(name: str, value: Any, binding: ArgumentBinding | None) -> list[str]:
    """The ``name=value`` parts one argument adds to the query string, each already encoded.

    Without a binding (a hand-written tool), a list repeats the name and an object is sent as JSON text.
    """
    if binding is None:
        if isinstance(value, list):
            return [f"{_encoded(name)}={_encoded(item)}" for item in _items(value)]
        return [f"{_encoded(name)}={_encoded(scalar_text(value))}"]
    style, explode = binding.effective_style, binding.effective_explode
    reserved = binding.allow_reserved

    def pair(key: str, text: str) -> str:
        return f"{_encoded(key)}={_encoded(text, allow_reserved=reserved)}"

    if style == "deepObject":
        if isinstance(value, dict | list):
            return [pair(key, text) for key, text in form_pairs({name: value})]
        return [pair(name, scalar_text(value))]
    delimiter = {"form": ",", "spaceDelimited": "%20", "pipeDelimited": "|"}[style]
    if isinstance(value, list):
        items = _items(value)
        if explode:
            return [pair(name, item) for item in items]
        return [f"{_encoded(name)}=" + delimiter.join(_encoded(item, allow_reserved=reserved) for item in items)]
    if isinstance(value, dict):
        members = _members(value)
        if explode:
            return [pair(key, text) for key, text in members]
        parts = (_encoded(part, allow_reserved=reserved) for member in members for part in member)
        return [f"{_encoded(name)}=" + delimiter.join(parts)]
    return [pair(name, scalar_text(value))]


def header_value(name: str, value: Any, binding: ArgumentBinding | None) -> str:
    """A header's value in ``simple`` style (``a,b``; an object ``k,v`` or with explode ``k=v``), checked.

    Header values are not percent-encoded; one that holds a line break or non-ASCII text is refused.
    """
    explode = binding is not None and binding.effective_explode
    if isinstance(value, list):
        text = ",".join(_items(value))
    elif isinstance(value, dict):
        members = _members(value)
        text = ",".join(f"{key}={item}" for key, item in members) if explode else _flat(members)
    else:
        text = scalar_text(value)
    if any(character in text for character in _UNSENDABLE):
        raise ToolError(f"invalid arguments: header {name} must not hold line breaks")
    if not text.isascii():
        raise ToolError(f"invalid arguments: header {name} must be ASCII text")
    return text


def cookie_pairs(name: str, value: Any, binding: ArgumentBinding | None) -> list[str]:
    """The ``name=value`` pairs one argument adds to the Cookie header (``form`` style), values encoded.

    Everything but RFC 3986's unreserved characters is percent-encoded, so no value can end its cookie
    (``;``) or start another.
    """
    explode = binding is None or binding.effective_explode
    if isinstance(value, list):
        items = [_encoded(item) for item in _items(value)]
        return [f"{name}={item}" for item in items] if explode else [f"{name}={','.join(items)}"]
    if isinstance(value, dict):
        members = [(_encoded(key), _encoded(text)) for key, text in _members(value)]
        if explode:
            return [f"{key}={text}" for key, text in members]
        return [f"{name}={','.join(part for pair in members for part in pair)}"]
    return [f"{name}={_encoded(scalar_text(value))}"]


def _flat(members: Iterable[tuple[str, str]]) -> str:
    return ",".join(part for pair in members for part in pair)
