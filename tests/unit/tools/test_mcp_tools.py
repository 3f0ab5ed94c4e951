"""MCP tools: listed from a real MCP server on loopback at build time, called through the MCP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ReportedToolError
from pydantic import BaseModel

from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from tests.support.mcp_server import LoopbackMcpServer
from tests.support.ports import refused_port
from tests.unit.tools.config_builders import call

SERVER_TOKEN = "mcp-token-5d1e9a7c44"


class Order(BaseModel):
    """An order line."""

    sku: str
    quantity: int = 1


def demo_server() -> MCPServer:
    """An MCP server with one tool per behaviour under test."""
    server = MCPServer("stepwise-test", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(name="docs.search")
    def search(query: str) -> str:
        """Search the documentation."""
        return f"3 pages about {query}"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, with a message meant for the caller."""
        raise ReportedToolError(reason)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answers after a while."""
        await anyio.sleep(seconds)
        return "finally"

    @server.tool()
    def big() -> str:
        """A very long answer."""
        return "y" * 200_000

    @server.tool()
    def whoami() -> str:
        """Repeats the credential it was called with, as a careless server might."""
        return f"you called with token {SERVER_TOKEN}"

    @server.tool()
    def place_order(order: Order) -> str:
        """Place an order."""
        return f"ordered {order.quantity} x {order.sku}"

    return server


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[LoopbackMcpServer]:
    """One MCP server for the whole module (starting one costs a few hundred milliseconds)."""
    with LoopbackMcpServer(demo_server()) as running:
        yield running


@pytest.fixture(scope="module")
def other_server() -> Iterator[LoopbackMcpServer]:
    """A second MCP server, with a tool named as one of the demo server's."""
    server = MCPServer("other", log_level="WARNING")

    @server.tool()
    def add(a: str, b: str) -> str:
        """Join two words."""
        return f"{a}-{b}"

    with LoopbackMcpServer(server) as running:
        yield running


def build(*entries: dict[str, Any], secret_resolver: SecretResolver | None = None) -> ToolRegistry:
    """A registry from ``mcp:`` entries."""
    config = parse_tools_config({"mcp": list(entries)})
    return build_tool_registry(config, config_dir=Path("."), secret_resolver=secret_resolver)


def test_the_servers_tools_are_offered_with_their_descriptions_and_schemas(mcp_server: LoopbackMcpServer) -> None:
    # Given an MCP server on loopback, configured as internal
    # When the registry is built
    registry = build({"url": mcp_server.url, "internal": True})
    # Then every tool is offered, and add's spec is the server's description and schema
    assert registry.names() == ["add", "docs_search", "fail", "slow", "big", "whoami", "place_order"]
    add = registry.specs(["add"])[0]
    assert add.description == "Add two integers."
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"


def test_a_call_returns_the_tools_answer_as_the_observation(mcp_server: LoopbackMcpServer) -> None:
    # Given the server's tools
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True}))
    # When add is called
    observation = invoker.invoke(call("add", a=2, b=3))
    # Then the observation is the server's answer
    assert (observation.ok, observation.content) == (True, "5")


def test_a_name_a_model_refuses_is_offered_sanitised_and_called_by_the_servers_name(
    mcp_server: LoopbackMcpServer,
) -> None:
    # Given the server's "docs.search" tool, offered as docs_search
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True}))
    # When the model calls docs_search
    observation = invoker.invoke(call("docs_search", query="retries"))
    # Then the server's docs.search answered
    assert observation.content == "3 pages about retries"


def test_an_error_the_tool_reports_is_a_failed_observation_with_its_message(mcp_server: LoopbackMcpServer) -> None:
    # Given a tool that fails
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True}))
    # When it is called
    observation = invoker.invoke(call("fail", reason="the index is rebuilding"))
    # Then the observation failed and carries the server's message
    assert not observation.ok
    assert observation.error == "the MCP tool reported an error"
    assert "the index is rebuilding" in observation.content


def test_invalid_arguments_are_refused_without_calling_the_server(mcp_server: LoopbackMcpServer) -> None:
    # Given the server's tools, listed
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True}))
    requests_before = len(mcp_server.requests)
    # When add is called with a string
    observation = invoker.invoke(call("add", a="two", b=3))
    # Then the observation names the field and the server was not contacted
    assert observation.error == "invalid arguments for add: a: 'two' is not of type 'integer'"
    assert len(mcp_server.requests) == requests_before


def test_a_bearer_credential_reaches_the_server_and_never_the_observation(mcp_server: LoopbackMcpServer) -> None:
    # Given a server configured with a bearer token, and a tool that repeats it
    entry = {"url": mcp_server.url, "internal": True, "apiKey": {"in": "bearer", "value": SERVER_TOKEN}}
    invoker = ToolInvoker(build(entry))
    # When the tool is called
    observation = invoker.invoke(call("whoami"))
    # Then the server received the token, and the observation shows it redacted
    assert mcp_server.requests[-1].headers["authorization"] == f"Bearer {SERVER_TOKEN}"
    assert observation.content == "you called with token ***"


def test_include_offers_only_the_named_tools(mcp_server: LoopbackMcpServer) -> None:
    # Given a server entry that includes two tools
    # When the registry is built
    registry = build({"url": mcp_server.url, "internal": True, "include": ["docs.search", "add"]})
    # Then only those are offered, in the listed order
    assert registry.names() == ["docs_search", "add"]


def test_include_naming_a_tool_the_server_lacks_is_a_config_error(mcp_server: LoopbackMcpServer) -> None:
    # Given an include with a typo
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": mcp_server.url, "internal": True, "include": ["ad"]})
    # Then the error names the server and the unknown tool
    assert str(error.value).startswith(f"mcp {mcp_server.url}: include: the server has no tool 'ad'")


def test_a_loopback_server_not_marked_internal_is_refused_and_never_contacted(mcp_server: LoopbackMcpServer) -> None:
    # Given the loopback server without internal: true
    requests_before = len(mcp_server.requests)
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": mcp_server.url})
    # Then listing was refused before any request
    assert "127.0.0.1 is a loopback address" in str(error.value)
    assert len(mcp_server.requests) == requests_before


def test_the_metadata_address_is_refused_as_an_mcp_server() -> None:
    # Given an MCP URL on the cloud metadata service
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": "http://169.254.169.254/mcp"})
    # Then it is refused as link-local
    assert "169.254.169.254 is a link-local address" in str(error.value)


def test_a_call_slower_than_the_timeout_becomes_a_timed_out_observation(mcp_server: LoopbackMcpServer) -> None:
    # Given a server with a 2 s timeout (its tools' listing must fit it too, on a busy machine)
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True, "timeoutSeconds": 2}))
    # When a tool that takes 6 s is called
    observation = invoker.invoke(call("slow", seconds=6))
    # Then the observation says it timed out
    assert observation.error == "timed out after 2.0 s"


def test_an_oversized_answer_is_truncated_with_a_marker(mcp_server: LoopbackMcpServer) -> None:
    # Given a 1000-byte cap on the server's answers
    invoker = ToolInvoker(build({"url": mcp_server.url, "internal": True, "maxResponseBytes": 1000}))
    # When a tool answers 200 000 characters
    observation = invoker.invoke(call("big"))
    # Then the first 1000 are kept and the marker says why
    assert observation.truncated
    assert observation.content == "y" * 1000 + "…[truncated: the response was longer than 1000 bytes]"


def test_a_model_argument_schema_is_inlined_without_references(mcp_server: LoopbackMcpServer) -> None:
    # Given a tool whose argument is a pydantic model (its schema uses $defs and $ref)
    registry = build({"url": mcp_server.url, "internal": True, "include": ["place_order"]})
    # When its spec is read
    parameters = registry.specs()[0].parameters
    # Then the model's fields are inline and nothing refers elsewhere
    assert "$ref" not in str(parameters) and "$defs" not in parameters
    assert parameters["properties"]["order"]["required"] == ["sku"]
    # And a call with those arguments reaches the tool
    observation = ToolInvoker(registry).invoke(call("place_order", order={"sku": "A-1", "quantity": 2}))
    assert observation.content == "ordered 2 x A-1"


def test_an_unreachable_server_is_a_config_error_naming_it() -> None:
    # Given an MCP URL on a loopback port nobody listens on
    with refused_port() as port, pytest.raises(ConfigError) as error:
        url = f"http://127.0.0.1:{port}/mcp"
        # When the registry is built
        build({"url": url, "internal": True, "timeoutSeconds": 2})
    # Then the error names the server and says listing failed
    assert str(error.value).startswith(f"mcp {url}: the tools could not be listed: ")


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"apiKey": {"in": "query", "name": "key", "value": "key-12345678"}}, "apiKey.in must be 'header' or 'bearer'"),
        ({"headers": {"Mcp-Session-Id": "x"}}, "headers: the Mcp-Session-Id header is set by the MCP client"),
        ({"headers": {"X-Tenant": "a\r\nb"}}, "headers: the value of X-Tenant holds a carriage return (CR)"),
    ],
)
def test_unsafe_mcp_settings_are_refused_naming_the_server(entry: dict[str, Any], reason: str) -> None:
    # Given an MCP entry with an unsafe setting
    # When it is read
    with pytest.raises(ConfigError) as error:
        parse_tools_config({"mcp": [{"url": "https://mcp.example.com/mcp", **entry}]})
    # Then the error names the server and the reason
    assert "mcp https://mcp.example.com/mcp" in str(error.value)
    assert reason in str(error.value)


def test_a_prefixed_servers_tools_are_offered_under_the_prefix_and_called_by_their_own_names(
    mcp_server: LoopbackMcpServer, other_server: LoopbackMcpServer
) -> None:
    # Given two servers that both offer `add`, the second with a prefix
    registry = build(
        {"url": mcp_server.url, "internal": True, "include": ["add"]},
        {"url": other_server.url, "internal": True, "prefix": "words_"},
    )
    invoker = ToolInvoker(registry)
    # When the model calls each
    sum_of = invoker.invoke(call("add", a=2, b=3))
    joined = invoker.invoke(call("words_add", a="ice", b="cream"))
    # Then both are offered, and each call reached its own server's `add`
    assert registry.names() == ["add", "words_add"]
    assert (sum_of.content, joined.content) == ("5", "ice-cream")


def test_a_renamed_tool_is_offered_under_its_new_name_and_called_by_the_servers(
    mcp_server: LoopbackMcpServer, other_server: LoopbackMcpServer
) -> None:
    # Given the second server's `add` renamed
    registry = build(
        {"url": mcp_server.url, "internal": True, "include": ["add"]},
        {"url": other_server.url, "internal": True, "rename": {"add": "join_words"}},
    )
    # When the model calls it by its new name
    observation = ToolInvoker(registry).invoke(call("join_words", a="sun", b="flower"))
    # Then the server's `add` answered
    assert (registry.names(), observation.content) == (["add", "join_words"], "sun-flower")


def test_a_rename_of_a_tool_the_server_lacks_is_a_config_error(other_server: LoopbackMcpServer) -> None:
    # Given a rename with a typo
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": other_server.url, "internal": True, "rename": {"ad": "join_words"}})
    # Then the error names the server, the unknown tool and what it offers
    assert str(error.value) == f"mcp {other_server.url}: rename: the server offers no tool 'ad'; it offers add"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"prefix": "has space_"}, "prefix"),
        ({"rename": {"add": "no.dots"}}, "rename: 'no.dots' is not a tool name"),
        ({"rename": {"add": "same", "sub": "same"}}, "rename: same is given to more than one tool"),
    ],
)
def test_a_prefix_or_rename_that_cannot_name_a_tool_is_refused(entry: dict[str, Any], reason: str) -> None:
    # When an entry with a bad prefix or rename is read, then the error names it
    with pytest.raises(ConfigError) as error:
        parse_tools_config({"mcp": [{"url": "https://mcp.example.com/mcp", **entry}]})
    assert "mcp https://mcp.example.com/mcp" in str(error.value) and reason in str(error.value)
