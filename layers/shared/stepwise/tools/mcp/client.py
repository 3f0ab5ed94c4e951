"""A synchronous face over the official MCP SDK's clients: streamable HTTP, legacy HTTP+SSE and stdio.

Over HTTP, each operation (listing the tools, calling one) opens its own MCP session in a fresh event
loop, does its work and closes it, all within the server's ``timeoutSeconds``: a session per call costs a
few round trips more than a long-lived one, but there is nothing to keep alive across a frozen Lambda
container, and parallel tool calls (each in its own invoker thread) never share a loop. A stdio server is
a process that costs a second to start, so it is kept running and shared (`stdio_servers`). The tool
listing of a server is read once per process and kept.

Guards: the server's host is checked before every session (loopback, private and link-local addresses
are refused unless the server is ``internal``); the SDK itself follows redirects only within the
endpoint's origin; the SSE event size is capped. The credential is resolved per session, so a rotated
secret is picked up when its cache expires. A stdio server's ``env`` values are resolved like credentials
(at each start of its process) and known to the redactor before it starts, and what it writes to stderr
is kept and its end quoted (redacted) when a call fails.

A thread that already runs an event loop (a notebook, an async caller embedding Stepwise, a sync
library driving one on its thread) cannot start another: there, the session's loop runs on a thread of
its own, and the call waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import httpx

from stepwise.config.configured_secrets import is_secret_env_value
from stepwise.config.credentials import SecretUnavailable
from stepwise.config.mcp_source import McpServerConfig
from stepwise.errors import ToolError
from stepwise.tools.guards import (
    Origin,
    checked_addresses,
)
from stepwise.tools.mcp.stdio_servers import STDIO_SERVERS
from stepwise.tools.own_loop import innermost, run_in_own_loop
from stepwise.tools.remote_source import RemoteSourceClient

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, RequestParamsMeta
    from mcp.types import Tool as RemoteTool

Result = TypeVar("Result")

MAX_LIST_PAGES = 50
# Where a tool call's idempotency key goes in the request's `_meta` (an unprefixed name, as the MCP
# specification allows for a client's own keys).
IDEMPOTENCY_META_KEY = "idempotencyKey"
# Each server's tool listing, by its configuration: read once per process (per Lambda container).
_LISTINGS: dict[str, list[RemoteTool]] = {}
_LISTINGS_LOCK = threading.Lock()


class McpClient(RemoteSourceClient[McpServerConfig]):
    """Lists and calls the tools of one MCP server; failures raise `ToolError` saying what failed."""

    source = "MCP server"

    def list_tools(self) -> list[RemoteTool]:
        """Every tool the server offers, all pages of the listing; read once per process and kept."""
        key = self.config.model_dump_json()
        with _LISTINGS_LOCK:
            if key in _LISTINGS:
                return list(_LISTINGS[key])

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

        listed = self._in_session(list_all)
        with _LISTINGS_LOCK:
            _LISTINGS[key] = listed
        return list(listed)

    def call_tool(self, name: str, arguments: dict[str, Any], *, idempotency_key: str | None = None) -> CallToolResult:
        """Call the server's tool ``name`` once, with ``idempotency_key`` in the request's `_meta` when given."""
        meta = {IDEMPOTENCY_META_KEY: idempotency_key} if idempotency_key else None

        async def call(client: Client) -> CallToolResult:
            return await client.call_tool(name, arguments, meta=cast("RequestParamsMeta | None", meta))

        return self._in_session(call)

    def _in_session(self, operation: Callable[[Client], Awaitable[Result]]) -> Result:
        from mcp import Client

        config = self.config
        if config.kind == "stdio":
            server = STDIO_SERVERS.server_for(config, self._environment)
            try:
                return server.run(operation, timeout=config.timeout_seconds)
            except Exception as exc:
                raise self._as_tool_error(innermost(exc), [], server.stderr_tail()) from None
        # Statuses the HTTP server answered with, to name a transport mismatch the SDK reports only vaguely.
        statuses: list[int] = []

        async def run() -> Result:
            with anyio.fail_after(config.timeout_seconds):
                async with AsyncExitStack() as stack:
                    transport = await self._transport(stack, statuses)
                    async with Client(transport, read_timeout_seconds=config.timeout_seconds, cache=None) as client:
                        return await operation(client)

        try:
            return run_in_own_loop(run, thread_name="mcp-session")
        except BaseException as exc:  # anyio wraps task failures in exception groups
            raise self._as_tool_error(innermost(exc), statuses, "") from None

    async def _transport(self, stack: AsyncExitStack, statuses: list[int]) -> AbstractAsyncContextManager[Any]:
        import httpx2

        config = self.config
        self._check_target()
        headers = self._headers()
        url = config.url or ""

        async def record(response: httpx2.Response) -> None:
            statuses.append(response.status_code)

        def http_client(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(
                headers=headers, timeout=timeout, auth=auth, trust_env=False, event_hooks={"response": [record]}
            )

        if config.kind == "sse":
            from mcp.client.sse import sse_client

            return sse_client(
                url,
                headers=headers,
                timeout=config.timeout_seconds,
                sse_read_timeout=config.timeout_seconds,
                httpx_client_factory=http_client,
            )
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            http_client(headers=headers, timeout=httpx2.Timeout(config.timeout_seconds))
        )
        return streamable_http_client(url, http_client=http, max_sse_event_size=config.max_response_bytes)

    def _environment(self) -> dict[str, str]:
        """A stdio server's ``env``, each value resolved (literal, ``ssm:``, ``secretsmanager:``) and redacted.

        ``env`` is where a stdio server's credential goes, and the server's stderr is quoted in errors, so
        every value is known to the redactor before the process starts. A literal shorter than
        `MIN_REDACTED_LENGTH` (``TZ: UTC``) is a setting, not a credential (`is_secret_env_value`).
        """
        environment: dict[str, str] = {}
        for name, value in self.config.env.items():
            if not is_secret_env_value(value):
                environment[name] = value
                continue
            try:
                environment[name] = self._secrets.resolve(value)
            except SecretUnavailable as exc:
                raise ToolError(f"env {name} of this MCP server is unavailable: {exc}") from None
        return environment

    def _check_target(self) -> None:
        if self.config.internal:
            return
        origin = Origin.of(httpx.URL(self.config.url or ""))
        checked_addresses(origin.host, origin.port, resolver=self._host_resolver, policy=self._address_policy)

    def _as_tool_error(self, failure: BaseException, statuses: list[int], server_stderr: str) -> BaseException:
        if isinstance(failure, ToolError):
            return failure
        if not isinstance(failure, Exception):
            return failure
        config = self.config
        if config.kind == "stdio":
            said = f"; it wrote: {self.redactor.redact(server_stderr)}" if server_stderr else ""
            if isinstance(failure, OSError):
                return ToolError(f"the stdio MCP server {config.command!r} could not be started: {failure}")
            if isinstance(failure, TimeoutError):
                return ToolError(f"the stdio MCP server did not answer within {config.timeout_seconds:.1f} s{said}")
            return ToolError(f"the stdio MCP server failed: {type(failure).__name__}: {failure}{said}")
        refused = next((status for status in statuses if status >= 400), None)
        if config.kind == "streamable-http" and refused in (404, 405):
            return ToolError(
                f"{config.url} answered {refused} to a streamable-HTTP request: check the path, or if this server "
                "speaks the legacy HTTP+SSE transport, set 'transport: sse' (its URL usually ends in /sse)"
            )
        if config.kind == "sse" and refused is not None:
            return ToolError(
                f"{config.url} answered {refused} when the HTTP+SSE stream was opened: if this server speaks "
                "streamable HTTP, remove 'transport: sse' (its URL usually ends in /mcp)"
            )
        if isinstance(failure, TimeoutError):
            return ToolError(f"timed out after {config.timeout_seconds:.1f} s")
        from mcp.shared.exceptions import MCPError

        if refused is not None:
            return ToolError(f"{config.url} answered HTTP {refused} ({config.kind} transport): {failure}")
        if isinstance(failure, MCPError):
            return ToolError(f"the MCP server answered with an error: {failure}")
        return ToolError(f"MCP request to {config.url} failed: {type(failure).__name__}: {failure}")
