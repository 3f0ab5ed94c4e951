"""Stepwise as an MCP server at `/mcp`: each profile a tool, over streamable HTTP, with the official `mcp` SDK.

**Stateless.** Each request is served on its own by the SDK's session manager in stateless mode, made for
that request and ended with it (`StreamableHTTPSessionManager(stateless=True)`): no session is kept
between requests, so any instance can answer any request. On AWS that is a must (each request may land
on another instance of the streaming function, and an instance serves one request at a time); locally
it costs nothing and behaves the same. Nothing outlives its request: the manager's task group lives
inside it, so the fronts need no ASGI lifespan (both run uvicorn with `lifespan="off"`), and a request
holds no thread but while it calls the API.

**Both eras of the protocol.** A 2026-07-28 client sends self-contained requests, which the SDK serves
without the manager's state, and cancels a call by closing its response. A handshake-era client
(2025-11-25 and before) initializes, then calls; it cancels a call by posting `notifications/cancelled`
as a request of its own, which a stateless server cannot route to the call. That notification is read
here, before the SDK sees it: the caller's calls in flight under that request id in this process are
cancelled (on AWS the call runs on another instance, so there only closing the call's response cancels
it).

**Keys.** A request without a caller identity (no API key, no IAM caller) is answered 401 with a
`WWW-Authenticate: Bearer` challenge (the key may be sent as a bearer token, or as `x-api-key`); a key
the server does not accept never reaches this app (the front answers 401, API Gateway 403).
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio

from stepwise.interop.api_calls import api_caller_of
from stepwise.interop.mounts import ProtocolApp, Receive, Send
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.problems import ApiError

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

    from stepwise.config.model import StepwiseConfig

MCP_PATH = "/mcp"
# The methods API Gateway routes to the app (template.yaml); GET and DELETE are answered 405, as the
# transport tells a client that a stateless server keeps no stream or session of its own.
MCP_ROUTES = (("POST", MCP_PATH), ("GET", MCP_PATH), ("DELETE", MCP_PATH))
# The challenge of a request that carries no key.
MISSING_KEY_CHALLENGE = 'Bearer realm="stepwise"'
_OWNER_STATE = "stepwise_mcp_owner"
_INSTRUCTIONS = (
    "Each tool is a Stepwise agent profile. Call one with a question: it runs the agent (its model, tools and "
    "limits) and returns the answer. Pass session_id to continue a conversation."
)


def mcp_protocol(config: Callable[[], StepwiseConfig]) -> ProtocolApp:
    """The MCP server, on `/mcp`, serving the profiles of `config()` as tools."""
    return ProtocolApp("mcp", McpApp(config), paths=(MCP_PATH,))


class McpApp:
    """ASGI app: checks who calls, then hands the request to the SDK's stateless streamable HTTP transport."""

    def __init__(self, config: Callable[[], StepwiseConfig]) -> None:
        self._config = config
        self._server: Server[Any] | None = None
        # the calls in flight in this process, by caller and request id, for a handshake-era cancellation
        self._in_flight: dict[tuple[str, str], set[anyio.CancelScope]] = {}

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        """The ASGI application."""
        if scope["type"] != "http":
            return
        caller = api_caller_of(dict(scope))
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        try:
            owner = request_owner({"requestContext": caller.request_context, "headers": headers})
        except ApiError as refused:
            challenge = {"www-authenticate": MISSING_KEY_CHALLENGE} if refused.status == 401 else {}
            await _json_rpc_error(send, refused.status, refused.message, challenge)
            return
        if scope["method"] != "POST":
            # stateless: no stream of the server's own to GET, no session to DELETE
            await _json_rpc_error(send, 405, f"{MCP_PATH} takes POST only (stateless)", {"allow": "POST"})
            return
        body = await _whole_body(receive)
        self._apply_cancellation(owner, body, headers)
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        manager = StreamableHTTPSessionManager(app=self._lowlevel(), stateless=True)
        state = {**(scope.get("state") or {}), _OWNER_STATE: owner}
        async with manager.run():
            await manager.handle_request({**scope, "state": state}, _replaying(body, receive), send)

    def _lowlevel(self) -> Server[Any]:
        """The SDK's server, built on the first request (the SDK is loaded only when MCP is called)."""
        if self._server is None:
            from mcp.server.lowlevel import Server

            self._server = Server(
                "stepwise", instructions=_INSTRUCTIONS, on_list_tools=self._list_tools, on_call_tool=self._call_tool
            )
        return self._server

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        from mcp.types import ListToolsResult

        from stepwise.interop.mcp_tools import profile_tools

        return ListToolsResult(tools=profile_tools(self._config()))

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        from stepwise.interop.mcp_tools import call_profile, error_result, tool_arguments

        profile = self._config().profiles.get(params.name)
        if profile is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}: the tools are the profiles (tools/list)")
        arguments = tool_arguments(params.arguments)
        if isinstance(arguments, str):
            return error_result(arguments)
        if ctx.request is None:
            raise RuntimeError("an MCP call without its HTTP request: the app serves streamable HTTP only")
        request_scope = ctx.request.scope
        caller = api_caller_of(request_scope)

        async def progress(value: float, message: str) -> None:
            await ctx.session.report_progress(value, None, message)

        key = (str(request_scope["state"][_OWNER_STATE]), str(ctx.request_id))
        with anyio.CancelScope() as call:
            self._in_flight.setdefault(key, set()).add(call)
            try:
                return await call_profile(caller, params.name, profile, arguments, progress)
            finally:
                calls = self._in_flight.get(key, set())
                calls.discard(call)
                if not calls:
                    self._in_flight.pop(key, None)
        # only a handshake-era `notifications/cancelled` gets here (the client no longer waits for this)
        return error_result("the call was cancelled, and its run with it")

    def _apply_cancellation(self, owner: str, body: bytes, headers: dict[str, str]) -> None:
        """Cancel the caller's calls a handshake-era `notifications/cancelled` names (a 2026-07-28 client
        closes the call's response instead, which the SDK turns into the same cancellation)."""
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if headers.get(MCP_PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            message = json.loads(body)
        except ValueError:
            return
        if not isinstance(message, dict) or message.get("method") != "notifications/cancelled" or "id" in message:
            return
        request_id = (message.get("params") or {}).get("requestId")
        for call in self._in_flight.get((owner, str(request_id)), set()):
            call.cancel()


async def _whole_body(receive: Receive) -> bytes:
    """The request's body (the front bounded its size already)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` first, then what the connection gives (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> MutableMapping[str, Any]:
        return pending.pop() if pending else await receive()

    return replay


async def _json_rpc_error(send: Send, status: int, message: str, headers: dict[str, str]) -> None:
    """An HTTP error whose body is a JSON-RPC error, which MCP clients show as the call's error."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    pairs = [(b"content-type", b"application/json"), *((k.encode(), v.encode()) for k, v in headers.items())]
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": body})
