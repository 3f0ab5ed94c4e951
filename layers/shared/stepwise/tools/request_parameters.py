"""Where each argument of an HTTP tool call goes: the path, the query string, headers, cookies or the body.

Arguments fill the path's ``{placeholders}`` (each value percent-encoded in its style, so ``../``, ``?``,
``#``, ``@`` or ``/`` stay inside their segment; a ``.`` or ``..`` segment is refused, so no value climbs
out of the endpoint's path); the rest go where the endpoint's ``bindings`` say, by default to the query
string (GET, DELETE) or a JSON body (POST, PUT, PATCH). Only properties the schema declares are sent,
when it declares any. How each is written is `stepwise.tools.parameter_styles`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from stepwise.config.http_api import PATH_PLACEHOLDER, HttpToolConfig
from stepwise.errors import ToolError
from stepwise.tools.parameter_styles import cookie_pairs, header_value, path_value, query_pairs

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# No body at all, as opposed to a JSON ``null`` body.
NO_BODY: Any = object()


@dataclass
class RequestParts:
    """One call's request before it has an origin: path, encoded query parts, headers, cookies and body."""

    path: str
    query: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[str] = field(default_factory=list)
    body: Any = NO_BODY

    @property
    def query_string(self) -> str:
        """The query string, its parts joined as they were encoded."""
        return "&".join(self.query)


def request_parts(endpoint: HttpToolConfig, arguments: dict[str, Any], *, query_key: str | None = None) -> RequestParts:
    """Place every argument of a call; `ToolError` for a path value that cannot be sent.

    An argument sent in the query under ``query_key`` (the name of the API's own query credential) is
    left out: the configured key always wins.
    """
    bindings = endpoint.bindings
    path = PATH_PLACEHOLDER.sub(lambda match: _filled(match.group(1), arguments, endpoint), endpoint.path)
    parts = RequestParts(path)
    path_names = set(endpoint.path_parameters)
    declared = endpoint.parameter.get("properties") or {}
    default_location = "body" if endpoint.method in BODY_METHODS else "query"
    body_fields: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in path_names or value is None or (declared and name not in declared):
            continue
        binding = bindings.get(name)
        location = binding.location if binding is not None else default_location
        wire_name = (binding.name if binding is not None else None) or name
        if location == "header":
            parts.headers[wire_name] = header_value(wire_name, value, binding)
        elif location == "cookie":
            parts.cookies.extend(cookie_pairs(wire_name, value, binding))
        elif location == "query":
            if wire_name != query_key:
                parts.query.extend(query_pairs(wire_name, value, binding))
        elif binding is not None and binding.name is None:
            parts.body = value
        else:
            body_fields[wire_name] = value
    if parts.body is NO_BODY and (body_fields or endpoint.method in BODY_METHODS):
        parts.body = body_fields
    return parts


def _filled(name: str, arguments: dict[str, Any], endpoint: HttpToolConfig) -> str:
    value = arguments.get(name)
    if value is None:
        raise ToolError(f"invalid arguments: path parameter {name} is missing")
    text = path_value(name, value, endpoint.bindings.get(name))
    if not text:
        raise ToolError(f"invalid arguments: path parameter {name} is empty")
    if any(segment in (".", "..") for segment in text.split("/")):
        # Dot segments are resolved by URL normalisation (RFC 3986, nginx), even percent-encoded, so
        # they would climb out of the endpoint's path on the server; no encoding makes them data.
        raise ToolError(f"invalid arguments: path parameter {name} must not contain '.' or '..' segments")
    return text


def with_query_pair(query: bytes, name: str, value: str) -> bytes:
    """``query`` (as sent) with every parameter called ``name`` replaced by one ``name=value``.

    The rest of the query keeps its encoding byte for byte: re-encoding it (as httpx's params would)
    could turn a style's delimiter into data.
    """
    kept = [part for part in query.split(b"&") if part and unquote(part.split(b"=", 1)[0].decode("ascii")) != name]
    kept.append(f"{quote(name, safe='')}={quote(value, safe='')}".encode("ascii"))
    return b"&".join(kept)
