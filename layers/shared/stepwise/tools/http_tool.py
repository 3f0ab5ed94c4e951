"""A tool that calls one endpoint of a configured HTTP API, with every guard in `guards` applied.

Where each argument goes, and how it is written, is `request_parameters` (OpenAPI's styles). The API
key is resolved at call time, so a rotated secret is used once its cache expires, and it always wins
over an argument of the same name.

For APIs that are not ``internal``, the host is resolved once, checked, and the connection is made to
that very address (with the original Host header and TLS server name), so a second DNS answer cannot
slip in a private address between the check and the connection. Connections come from the origin's own
client (`ClientsByOrigin`), never one opened for another host at the same address.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from stepwise.config.credentials import SecretReference, SecretResolver, SecretUnavailable
from stepwise.config.http_api import ApiConfig, ApiKeyConfig, HttpToolConfig
from stepwise.errors import ToolError
from stepwise.models.messages import ToolSpec
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
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
from stepwise.tools.idempotency import CallEffects
from stepwise.tools.request_body import encoded_body
from stepwise.tools.request_parameters import NO_BODY, request_parts, with_query_pair

MAX_REDIRECTS = 3
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

    @property
    def effects(self) -> CallEffects:
        """Whether a call may change something (its method, unless configured) and whether the API honours keys."""
        return CallEffects.of(self._api, side_effects=self._api.tool_has_side_effects(self._endpoint))

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Send the request and describe the response; failures raise `ToolError` saying what failed.

        The call's idempotency key goes in the configured header (`Idempotency-Key` by default).
        """
        request = self._first_request(arguments)
        url, json_body = request.url, request.json_body
        headers = _merged_headers(request.headers, self._headers(context))
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
                    method, json_body = "GET", NO_BODY
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
        key = self._api.api_key
        query_key = key.name if key is not None and key.location == "query" else None
        parts = request_parts(self._endpoint, arguments, query_key=query_key)
        url = httpx.URL(f"{self._api.url}{parts.path}")
        self._check_inside_base(url)
        if parts.query:
            url = url.copy_with(query=parts.query_string.encode("ascii"))
        headers = dict(parts.headers)
        if parts.cookies:
            headers["Cookie"] = "; ".join(parts.cookies)
        return _Request(self._with_query_key(url), headers, parts.body)

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
        # Any argument of the same name is replaced: the configured key always wins.
        return url.copy_with(query=with_query_pair(url.query, key.name, self._resolve_key(key)))

    def _headers(self, context: CallContext) -> dict[str, str]:
        headers = dict(_DEFAULT_HEADERS)
        key_header = self._api.idempotency_key.header
        if key_header and context.idempotency_key:
            headers[key_header] = context.idempotency_key
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
        if json_body is not NO_BODY:
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
    """The first request of a call: URL with its query, argument headers, and the JSON body or `NO_BODY`."""

    url: httpx.URL
    headers: dict[str, str]
    json_body: Any


def _merged_headers(from_arguments: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    """Argument headers, then the tool's own (defaults and API key), which win whatever the case."""
    taken = {name.lower() for name in own}
    return {**{name: value for name, value in from_arguments.items() if name.lower() not in taken}, **own}
