"""Each tool call's idempotency key reaches its tool: as a header, in an MCP request's `_meta`, as a keyword.

The key is the same for every attempt of one call and differs between calls, so a receiver that keeps
it can tell a repeat from a new call.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, build_tool_registry
from stepwise.tools.base import CallContext
from stepwise.tools.idempotency import CallEffects, idempotency_key
from tests.support.mcp_server import LoopbackMcpServer
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint, string_properties

KEY = idempotency_key("run-1", 3, "call-7")


def transfers_api(server: ScriptableToolServer, method: str = "POST", **settings: Any) -> dict[str, Any]:
    tools = [endpoint("transfer", "/transfer", string_properties("to"), method=method)]
    return {"apis": [api_entry(server.url, tools, **settings)]}


def test_the_key_is_the_same_for_every_attempt_of_a_call_and_differs_between_calls() -> None:
    # When the key of one call is derived twice, and the keys of its neighbours
    again = idempotency_key("run-1", 3, "call-7")
    others = {
        idempotency_key("run-1", 3, "call-8"),
        idempotency_key("run-1", 4, "call-7"),
        idempotency_key("run-2", 3, "call-7"),
    }

    # Then the call has one key, its neighbours others, and each is a UUID receivers accept
    assert again == KEY
    assert KEY not in others and len(others) == 3
    assert len(KEY) == 36 and KEY.count("-") == 4


def test_an_http_tool_sends_the_key_as_idempotency_key(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a POST tool with the default settings
    invoker = make_invoker(transfers_api(tool_server))

    # When a call is made with its key
    invoker.invoke(call("transfer", to="bob"), CallContext(idempotency_key=KEY))

    # Then the API received it in the IETF draft's header
    assert tool_server.requests[0].headers["idempotency-key"] == KEY


def test_the_header_can_be_renamed(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> None:
    # Given an API that reads its keys from another header
    invoker = make_invoker(transfers_api(tool_server, idempotencyKey={"header": "X-Request-Id"}))

    # When a call is made
    invoker.invoke(call("transfer", to="bob"), CallContext(idempotency_key=KEY))

    # Then the key went in that header only
    headers = tool_server.requests[0].headers
    assert headers["x-request-id"] == KEY
    assert "idempotency-key" not in headers


def test_the_header_can_be_turned_off(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> None:
    # Given an API that must not get the header
    invoker = make_invoker(transfers_api(tool_server, idempotencyKey={"header": None}))

    # When a call is made, then no key is sent
    invoker.invoke(call("transfer", to="bob"), CallContext(idempotency_key=KEY))
    assert "idempotency-key" not in tool_server.requests[0].headers


@pytest.mark.parametrize("header", ["Content-Length", "bad header"])
def test_a_header_that_cannot_carry_the_key_is_a_config_error(header: str) -> None:
    with pytest.raises(ConfigError, match="idempotencyKey > header"):
        parse_tools_config(
            {"apis": [api_entry("http://127.0.0.1:1", [endpoint("t", "/t")], idempotencyKey={"header": header})]}
        )


@pytest.mark.parametrize(
    ("method", "settings", "tool_settings", "expected"),
    [
        ("GET", {}, {}, CallEffects(side_effects=False)),
        ("POST", {}, {}, CallEffects(side_effects=True)),
        ("DELETE", {"idempotencyKey": {"honoured": True}}, {}, CallEffects(side_effects=True, key_honoured=True)),
        ("GET", {"sideEffects": True}, {}, CallEffects(side_effects=True)),
        ("POST", {"sideEffects": True}, {"sideEffects": False}, CallEffects(side_effects=False)),
    ],
    ids=["GET", "POST", "DELETE to an API honouring keys", "GET marked sideEffects", "a tool overriding its API"],
)
def test_what_a_calls_effects_are_comes_from_its_method_unless_configured(
    tmp_path: Path, method: str, settings: dict[str, Any], tool_settings: dict[str, Any], expected: CallEffects
) -> None:
    # Given an API tool with a method and settings
    tools = [endpoint("t", "/t", method=method, **tool_settings)]
    config = parse_tools_config({"apis": [api_entry("http://127.0.0.1:1", tools, **settings)]})

    # When the registry is built, then the tool's calls have the expected effects
    assert build_tool_registry(config, config_dir=tmp_path).effects("t") == expected


def test_a_python_tool_declaring_idempotency_key_gets_it_and_the_model_never_sees_it(tmp_path: Path) -> None:
    # Given a deployer's module whose tool takes the key, marked as changing things
    (tmp_path / "payments.py").write_text(
        textwrap.dedent(
            '''
            from stepwise.tools import tool

            @tool
            def pay(to: str, idempotency_key: str | None = None) -> str:
                """Pay someone."""
                return f"paid {to} once for {idempotency_key}"
            '''
        )
    )
    config = parse_tools_config({"python": [{"module": "payments", "sideEffects": True}]})
    registry = build_tool_registry(config, config_dir=tmp_path)

    # When it is called with a key
    observation = ToolInvoker(registry).invoke(call("pay", to="bob"), CallContext(idempotency_key=KEY))

    # Then the function got the key, the schema does not offer it, and its calls change things
    assert observation.content == f"paid bob once for {KEY}"
    assert list(registry.specs(["pay"])[0].parameters["properties"]) == ["to"]
    assert registry.effects("pay") == CallEffects(side_effects=True)


def test_an_mcp_tool_gets_the_key_in_the_requests_meta() -> None:
    # Given an MCP server whose tool reads the request's _meta
    server = MCPServer("keys", log_level="WARNING")

    @server.tool()
    def book(room: str, ctx: Context) -> str:
        """Book a room."""
        meta = ctx.request_context.meta or {}
        return f"booked {room} with key {dict(meta).get('idempotencyKey')}"

    with LoopbackMcpServer(server) as running:
        config = parse_tools_config({"mcp": [{"url": running.url, "internal": True, "sideEffects": True}]})
        registry = build_tool_registry(config, config_dir=Path("."))
        # When the tool is called with a key
        observation = ToolInvoker(registry).invoke(call("book", room="A"), CallContext(idempotency_key=KEY))

    # Then the server saw it
    assert observation.content == f"booked A with key {KEY}"
    assert registry.effects("book") == CallEffects(side_effects=True)


def test_an_unknown_key_setting_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="idempotencyKey > honored"):
        parse_tools_config(
            {"apis": [api_entry("http://127.0.0.1:1", [endpoint("t", "/t")], idempotencyKey={"honored": True})]}
        )
