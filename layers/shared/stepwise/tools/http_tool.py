"""A tool that calls one endpoint of a configured HTTP API, with every guard in `guards` applied.

Arguments fill the path's ``{placeholders}`` (each value fully percent-encoded, so ``../``, ``?``,
``#``, ``@`` or ``/`` stay inside their segment; a ``multi_segment`` one keeps its ``/`` and has each
segment encoded; a ``.`` or ``..`` segment is refused, so no value climbs out of the endpoint's path); the rest go
where the endpoint's ``bindings`` say (query, header, a JSON body field or the whole JSON body), by
default to the query string (GET, DELETE)
or a JSON body (POST, PUT, PATCH). Only properties the schema declares are sent, when it declares any.
The API key is resolved at call time, so a rotated secret is used once its cache expires, and it always
wins over an argument of the same name.

For APIs that are not ``internal``, the host is resolved once, checked, and the connection is made to
that very address (with the original Host header and TLS server name), so a second DNS answer cannot
slip in a private address between the check and the connection. Connections come from the origin's own
client (`ClientsByOrigin`), never one opened for another host at the same address.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from stepwise.config.credentials import SecretReference, SecretResolver, SecretUnavailable
from stepwise.config.http_api import PATH_PLACEHOLDER, ApiConfig, ApiKeyConfig, ArgumentBinding, HttpToolConfig
from stepwise.errors import ToolError
from stepwise.models.messages import ToolSpec
from stepwise.tools.base import ToolResult
from stepwise.tools.guards import (
    AddressPolicy,
    HostResolver,
    Origin,
    check_same_origin,
    checked_addresses,
    refusal_reason,
    system_resolver,
)
from stepwise.tools.http_clients import ClientsByOrigin
from stepwise.tools.http_response import DeadlinePassed, describe_body, error_snippet, read_capped_body
from stepwise.tools.request_body import encoded_body

MAX_REDIRECTS = 3
_BODY_METHODS = {"POST", "PUT", "PATCH"}
# No body at all, as opposed to a JSON ``null`` body.
_NO_BODY = object()
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}
# what no HTTP header can carry: a line break would end it (or be refused by the client), NUL is never allowed
_UNSENDABLE = ("\r", "\n", "\0")
_DEFAULT_HEADERS = {
    "Accept": "application/json, text/plain;q=0.9, */*;q=0.5",
    # Compressed bodies would be inflated before the size cap applies; ask for them as they are.
    "Accept-Encoding": "identity",
    "User-Agent": "stepwise-tools/0.1",
}


class HttpTool:
    """One endpoint of an `ApiConfig` as a `Tool`."""

    def __init__(
        self,
        api: ApiConfig,
        endpoint: HttpToolConfig,
        *,
        http_clients: ClientsByOrigin,
        secret_resolver: SecretResolver,
        host_resolver: HostResolver = system_resolver,
        address_policy: AddressPolicy = refusal_reason,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        self._api = api
        self._endpoint = endpoint
        self._clients = http_clients
        self._secrets = secret_resolver
        self._host_resolver = host_resolver
        self._address_policy = address_policy
        self._max_redirects = max_redirects
        self._base_url = httpx.URL(api.url)
        self._origin = Origin.of(self._base_url)
        self._spec = ToolSpec(name=endpoint.tool_name, description=endpoint.description, parameters=endpoint.parameter)

    @property
    def method(self) -> str:
        """The endpoint's HTTP method (GET, POST, ...)."""
        return self._endpoint.method

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this endpoint."""
        return self._spec

    def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Send the request and describe the response; failures raise `ToolError` saying what failed."""
        request = self._first_request(arguments)
        url, json_body = request.url, request.json_body
        headers = _merged_headers(request.headers, self._headers())
        # The API's time starts once its request is built: resolving a secret (an SSM or Secrets Manager
        # call on a cold cache) is bounded by the AWS client's own timeouts, not charged to the API.
        timeout_seconds = self._api.max_execution_time / 1000
        deadline = time.monotonic() + timeout_seconds
        method: str = self._endpoint.method
        try:
            for _ in range(self._max_redirects + 1):
                response = self._send(method, url, headers, json_body, deadline)
                try:
                    location = response.headers.get("location")
                    if response.status_code not in _REDIRECT_STATUSES or not location:
                        body, truncated = read_capped_body(
                            response, max_bytes=self._api.max_response_bytes, deadline=deadline
                        )
                        return self._result(response, body, truncated)
                finally:
                    response.close()
                url = self._redirect_target(url, location)
                if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                    method, json_body = "GET", _NO_BODY
        except (httpx.TimeoutException, DeadlinePassed):
            raise ToolError(f"timed out after {timeout_seconds:.1f} s") from None
        except httpx.ConnectError as exc:
            raise ToolError(f"could not connect to {self._origin}: {str(exc) or type(exc).__name__}") from None
        except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.CloseError):
            raise ToolError(f"the connection to {self._origin} was reset or closed by the server") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"HTTP request failed: {type(exc).__name__}") from None
        raise ToolError(f"refused to follow more than {self._max_redirects} redirects")

    def _first_request(self, arguments: dict[str, Any]) -> _Request:
        bindings = self._endpoint.bindings
        path = PATH_PLACEHOLDER.sub(
            lambda match: _path_value(match.group(1), arguments, bindings.get(match.group(1))), self._endpoint.path
        )
        url = httpx.URL(f"{self._api.url}{path}")
        self._check_inside_base(url)
        path_names = set(self._endpoint.path_parameters)
        declared = self._endpoint.parameter.get("properties") or {}
        default_location = "body" if self._endpoint.method in _BODY_METHODS else "query"
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        body_fields: dict[str, Any] = {}
        whole_body: Any = _NO_BODY
        for name, value in arguments.items():
            if name in path_names or value is None or (declared and name not in declared):
                continue
            binding = self._endpoint.bindings.get(name)
            location = binding.location if binding is not None else default_location
            wire_name = (binding.name if binding is not None else None) or name
            if location == "header":
                headers[wire_name] = _header_value(wire_name, value)
            elif location == "query":
                query.extend(_query_pairs(wire_name, value, binding))
            elif binding is not None and binding.name is None:
                whole_body = value
            else:
                body_fields[wire_name] = value
        if whole_body is _NO_BODY and (body_fields or self._endpoint.method in _BODY_METHODS):
            whole_body = body_fields
        with_query = url.copy_merge_params(tuple(query)) if query else url
        return _Request(self._with_query_key(with_query), headers, whole_body)

    def _check_inside_base(self, url: httpx.URL) -> None:
        """Defence in depth: after encoding, the URL must still be under the configured base URL."""
        base_path = self._base_url.raw_path.rstrip(b"/")
        inside = url.raw_path == base_path or url.raw_path.startswith(base_path + b"/") or not base_path
        if Origin.of(url) != self._origin or not inside:
            raise ToolError("refused: the arguments would change the API's address")

    def _with_query_key(self, url: httpx.URL) -> httpx.URL:
        key = self._api.api_key
        if key is None or key.location != "query" or key.name is None:
            return url
        # copy_set_param replaces any argument of the same name: the configured key always wins.
        return url.copy_set_param(key.name, self._resolve_key(key))

    def _headers(self) -> dict[str, str]:
        headers = dict(_DEFAULT_HEADERS)
        key = self._api.api_key
        if key is not None and key.location == "header" and key.name:
            headers[key.name] = self._resolve_key(key)
        elif key is not None and key.location == "bearer":
            headers["Authorization"] = f"Bearer {self._resolve_key(key)}"
        return headers

    def _resolve_key(self, key: ApiKeyConfig) -> str:
        try:
            secret = self._secrets.resolve(key.value)
        except SecretUnavailable as exc:
            raise ToolError(f"the credential of this API is unavailable: {exc}") from None
        if any(character in secret for character in _UNSENDABLE):
            # A parameter stored from a file keeps its final newline; sent, it is a malformed header or a
            # different key, and the API's refusal would not say why.
            reference = SecretReference.parse(key.value).describe()
            raise ToolError(
                f"the credential of this API cannot be sent: secret {reference} holds a line break or NUL; "
                "store it without one"
            )
        return secret

    def _send(
        self,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        json_body: Any,
        deadline: float,
    ) -> httpx.Response:
        if self._api.internal:
            return self._send_to(None, method, url, headers, json_body, deadline)
        addresses = checked_addresses(
            url.host, self._origin.port, resolver=self._host_resolver, policy=self._address_policy
        )
        for address in addresses[:-1]:
            # Like the system's own connect, fall back to the next address (IPv6 first, then IPv4).
            try:
                return self._send_to(str(address), method, url, headers, json_body, deadline)
            except httpx.ConnectError:
                continue
        return self._send_to(str(addresses[-1]), method, url, headers, json_body, deadline)

    def _send_to(
        self,
        address: str | None,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        json_body: Any,
        deadline: float,
    ) -> httpx.Response:
        """Send to ``address`` (the host's checked address; None lets the client resolve the host)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlinePassed
        connect_url, extensions = url, {}
        request_headers = dict(headers)
        if address is not None and address != url.host:
            connect_url = url.copy_with(host=address)
            request_headers["Host"] = url.netloc.decode("ascii")
            if url.scheme == "https":
                # TLS still verifies the certificate against the name, not the address.
                extensions["sni_hostname"] = url.host
        content: bytes | None = None
        if json_body is not _NO_BODY:
            content, request_headers["Content-Type"] = encoded_body(json_body, self._endpoint.body_encoding)
        # Redirects stay on this origin, so the origin's own client serves every request of a call.
        client = self._clients.client_for(self._origin)
        request = client.build_request(
            method,
            connect_url,
            headers=request_headers,
            content=content,
            timeout=httpx.Timeout(remaining),
            extensions=extensions,
        )
        return client.send(request, stream=True, follow_redirects=False)

    def _redirect_target(self, current: httpx.URL, location: str) -> httpx.URL:
        try:
            target = current.join(location)
        except httpx.InvalidURL:
            raise ToolError("refused a redirect to an invalid URL") from None
        check_same_origin(target, self._origin, what="a redirect")
        return self._with_query_key(target)

    def _result(self, response: httpx.Response, body: bytes, truncated: bool) -> ToolResult:
        text = describe_body(
            body,
            content_type=response.headers.get("content-type", ""),
            truncated=truncated,
            max_bytes=self._api.max_response_bytes,
            redactor=self._secrets.redactor,
        )
        if response.is_success and not body:
            # An empty observation reads as a failure to the model; say the call worked and sent nothing back.
            done = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
            return ToolResult(
                content=f"{done}: the request succeeded; the response has no body.", status_code=response.status_code
            )
        if response.is_success:
            return ToolResult(content=text, status_code=response.status_code, truncated=truncated)
        error = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        return ToolResult(
            content=f"{error}: {error_snippet(text)}" if text else error,
            ok=False,
            status_code=response.status_code,
            error=error,
            truncated=truncated,
        )


@dataclass(frozen=True)
class _Request:
    """The first request of a call: URL with its query, argument headers, and the JSON body or `_NO_BODY`."""

    url: httpx.URL
    headers: dict[str, str]
    json_body: Any


def _path_value(name: str, arguments: dict[str, Any], binding: ArgumentBinding | None) -> str:
    value = arguments.get(name)
    if value is None:
        raise ToolError(f"invalid arguments: path parameter {name} is missing")
    text = _as_text(value)
    if not text:
        raise ToolError(f"invalid arguments: path parameter {name} is empty")
    segments = text.split("/") if binding is not None and binding.multi_segment else [text]
    if any(segment in (".", "..") for segment in segments):
        # Dot segments are resolved by URL normalisation (RFC 3986, nginx), even percent-encoded, so
        # they would climb out of the endpoint's path on the server; no encoding makes them data.
        raise ToolError(f"invalid arguments: path parameter {name} must not contain '.' or '..' segments")
    return "/".join(quote(segment, safe="") for segment in segments)


def _query_pairs(name: str, value: object, binding: ArgumentBinding | None) -> list[tuple[str, str]]:
    """The query parameters of one argument: OpenAPI's ``form`` or ``deepObject`` style when bound.

    An unbound object is sent as JSON text: a hand-written tool declares no style to spread it by.
    """
    explode = binding is None or binding.explode
    if isinstance(value, list):
        items = [_as_text(item) for item in value if item is not None]
        return [(name, item) for item in items] if explode else [(name, ",".join(items))]
    if isinstance(value, dict) and binding is not None:
        fields = [(str(key), _as_text(item)) for key, item in value.items() if item is not None]
        if binding.style == "deepObject":
            return [(f"{name}[{key}]", text) for key, text in fields]
        if explode:
            return fields
        return [(name, ",".join(part for pair in fields for part in pair))]
    return [(name, _as_text(value))]


def _merged_headers(from_arguments: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    """Argument headers, then the tool's own (defaults and API key), which win whatever the case."""
    taken = {name.lower() for name in own}
    return {**{name: value for name, value in from_arguments.items() if name.lower() not in taken}, **own}


def _header_value(name: str, value: object) -> str:
    text = ",".join(_as_text(item) for item in value) if isinstance(value, list) else _as_text(value)
    if any(character in text for character in _UNSENDABLE):
        raise ToolError(f"invalid arguments: header {name} must not hold line breaks")
    if not text.isascii():
        raise ToolError(f"invalid arguments: header {name} must be ASCII text")
    return text


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
