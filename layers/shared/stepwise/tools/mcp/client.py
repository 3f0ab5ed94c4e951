"""A synchronous face over the official MCP SDK's streamable-HTTP client.

Each operation (listing the tools, calling one) opens its own MCP session in a fresh event loop, does its
work and closes it, all within the server's ``timeoutSeconds``. A session per call costs a few round
trips more than a long-lived one, but there is nothing to keep alive across a frozen Lambda container,
and parallel tool calls (each in its own invoker thread) never share a loop.

Guards: the server's host is checked before every session (loopback, private and link-local addresses
are refused unless the server is ``internal``); the SDK itself follows redirects only within the
endpoint's origin; the SSE event size is capped. The credential is resolved per session, so a rotated
secret is picked up when its cache expires.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx

from stepwise.credentials import Redactor, SecretResolver, SecretUnavailable
from stepwise.errors import ToolError
from stepwise.models.tool_config import McpServerConfig
from stepwise.tools.guards import (
    AddressPolicy,
    HostResolver,
    Origin,
    checked_addresses,
    refusal_reason,
    system_resolver,
)

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult
    from mcp.types import Tool as RemoteTool

Result = TypeVar("Result")

MAX_LIST_PAGES = 50
_USER_AGENT = "stepwise-tools/0.1"


class McpClient:
    """Lists and calls the tools of one MCP server; failures raise `ToolError` saying what failed."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        secret_resolver: SecretResolver,
        host_resolver: HostResolver = system_resolver,
        address_policy: AddressPolicy = refusal_reason,
    ) -> None:
        self.config = config
        self._secrets = secret_resolver
        self._host_resolver = host_resolver
        self._address_policy = address_policy

    @property
    def redactor(self) -> Redactor:
        """The redactor that knows this server's credential."""
        return self._secrets.redactor

    def list_tools(self) -> list[RemoteTool]:
        """Every tool the server offers, all pages of the listing."""

        async def list_all(client: Client) -> list[RemoteTool]:
            tools: list[RemoteTool] = []
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
            raise ToolError(f"the tool listing has more than {MAX_LIST_PAGES} pages")

        return self._in_session(list_all)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call the server's tool ``name`` once."""

        async def call(client: Client) -> CallToolResult:
            return await client.call_tool(name, arguments)

        return self._in_session(call)

    def _in_session(self, operation: Callable[[Client], Awaitable[Result]]) -> Result:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        self._check_target()
        headers = self._headers()

        async def run() -> Result:
            with anyio.fail_after(config.timeout_seconds):
                async with httpx2.AsyncClient(
                    headers=headers, timeout=httpx2.Timeout(config.timeout_seconds), trust_env=False
                ) as http:
                    transport = streamable_http_client(
                        config.url, http_client=http, max_sse_event_size=config.max_response_bytes
                    )
                    async with Client(transport, read_timeout_seconds=config.timeout_seconds, cache=None) as client:
                        return await operation(client)

        try:
            return anyio.run(run)
        except BaseException as exc:  # anyio wraps task failures in exception groups
            raise self._as_tool_error(_innermost(exc)) from None

    def _check_target(self) -> None:
        if self.config.internal:
            return
        origin = Origin.of(httpx.URL(self.config.url))
        checked_addresses(origin.host, origin.port, resolver=self._host_resolver, policy=self._address_policy)

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": _USER_AGENT, **self.config.headers}
        key = self.config.api_key
        if key is None:
            return headers
        try:
            secret = self._secrets.resolve(key.value)
        except SecretUnavailable as exc:
            raise ToolError(f"the credential of this MCP server is unavailable: {exc}") from None
        if key.location == "bearer":
            headers["Authorization"] = f"Bearer {secret}"
        elif key.name is not None:
            headers[key.name] = secret
        return headers

    def _as_tool_error(self, failure: BaseException) -> BaseException:
        if isinstance(failure, ToolError):
            return failure
        if isinstance(failure, TimeoutError):
            return ToolError(f"timed out after {self.config.timeout_seconds:.1f} s")
        if not isinstance(failure, Exception):
            return failure
        from mcp.shared.exceptions import MCPError

        if isinstance(failure, MCPError):
            return ToolError(f"the MCP server answered with an error: {failure}")
        return ToolError(f"MCP request to {self.config.url} failed: {type(failure).__name__}: {failure}")


def _innermost(failure: BaseException) -> BaseException:
    """The first real failure inside (possibly nested) exception groups."""
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    return failure
