"""The HTTP transport under the A2A SDK's client: every request it sends passes the same guards as an HTTP tool's.

The SDK sends its requests (the card, the JSON-RPC or HTTP+JSON calls) through an `httpx.AsyncClient` it is
given; this transport under that client checks each one before it leaves:

- it goes to the configured origin only (the card's interface URLs, a redirect, nothing else may move it);
- unless the agent is ``internal``, every address its host resolves to is public (`stepwise.tools.guards`);
- its response body is read up to `MAX_BODY_BYTES` and no further, and only without a content coding, so
  neither a huge nor a compressed answer can exhaust the container's memory.

As for MCP sessions, the address is checked before each request and the name then resolved again by the
HTTP client, so the check is not pinned to the address.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from typing import cast

import anyio.to_thread
import httpx

from stepwise.errors import ToolError
from stepwise.tools.guards import AddressPolicy, HostResolver, Origin, check_same_origin, checked_addresses

# An answer is a task (artifacts and history) or a card: far above any observation, far below a Lambda's memory.
MAX_BODY_BYTES = 8 * 1024 * 1024


class GuardedTransport(httpx.AsyncBaseTransport):
    """Sends a request only to `origin` (and a public address unless `internal`); caps each response body."""

    def __init__(
        self,
        origin: Origin,
        *,
        internal: bool,
        host_resolver: HostResolver,
        address_policy: AddressPolicy,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self._origin = origin
        self._internal = internal
        self._host_resolver = host_resolver
        self._address_policy = address_policy
        self._max_body_bytes = max_body_bytes
        self._inner = httpx.AsyncHTTPTransport(verify=_tls_context())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's target, send it, and hand back a response whose body is capped."""
        check_same_origin(request.url, self._origin, what="an A2A request")
        if not self._internal:
            check = functools.partial(checked_addresses, resolver=self._host_resolver, policy=self._address_policy)
            await anyio.to_thread.run_sync(check, self._origin.host, self._origin.port)
        response = await self._inner.handle_async_request(request)
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            await response.aclose()
            raise ToolError(f"the A2A agent answered with the content coding {coding!r}, which is not accepted")
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(cast("httpx.AsyncByteStream", response.stream), self._max_body_bytes),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots), made once: loading the roots costs about 90 ms a call."""
    return httpx.create_ssl_context()


class _CappedStream(httpx.AsyncByteStream):
    """A response body that fails once it passes `limit` bytes."""

    def __init__(self, body: httpx.AsyncByteStream, limit: int) -> None:
        self._body = body
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._body:
            read += len(chunk)
            if read > self._limit:
                raise ToolError(f"the A2A agent's answer is longer than {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._body.aclose()
