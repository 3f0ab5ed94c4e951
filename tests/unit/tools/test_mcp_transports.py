"""MCP transports: the legacy HTTP+SSE transport, transport mismatches named with their fix, stdio entries.

The SSE server is the SDK's MCPServer served by its own ``sse_app`` on loopback.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from mcp.server.mcpserver import MCPServer
from moto import mock_aws

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from tests.support.mcp_server import LoopbackMcpServer
from tests.unit.tools.config_builders import call


def arithmetic_server() -> MCPServer:
    """An MCP server with one tool."""
    server = MCPServer("arithmetic", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


@pytest.fixture(scope="module")
def sse_server() -> Iterator[LoopbackMcpServer]:
    """One legacy HTTP+SSE server for the module."""
    with LoopbackMcpServer(arithmetic_server(), transport="sse") as running:
        yield running


@pytest.fixture(scope="module")
def streamable_server() -> Iterator[LoopbackMcpServer]:
    """One streamable-HTTP server for the module."""
    with LoopbackMcpServer(arithmetic_server()) as running:
        yield running


def build(entry: dict[str, Any]) -> ToolRegistry:
    """A registry from one ``mcp:`` entry."""
    return build_tool_registry(parse_tools_config({"mcp": [entry]}), config_dir=Path("."))


def test_an_sse_server_is_listed_and_called_with_transport_sse(sse_server: LoopbackMcpServer) -> None:
    # Given an HTTP+SSE server configured with transport: sse
    invoker = ToolInvoker(build({"url": sse_server.url, "internal": True, "transport": "sse"}))
    # When its tool is called
    observation = invoker.invoke(call("add", a=2, b=3))
    # Then the answer came over the SSE stream and the messages endpoint the server announced
    assert (observation.ok, observation.content) == (True, "5")
    assert {(request.method, request.path) for request in sse_server.requests} == {
        ("GET", "/sse"),
        ("POST", "/messages/"),
    }


def test_an_sse_server_reached_as_streamable_http_names_transport_sse(sse_server: LoopbackMcpServer) -> None:
    # Given the HTTP+SSE server configured without a transport
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": sse_server.url, "internal": True})
    # Then the error gives the status and the setting that fixes it
    assert f"{sse_server.url} answered 405 to a streamable-HTTP request" in str(error.value)
    assert "set 'transport: sse'" in str(error.value)


def test_a_streamable_server_reached_as_sse_says_to_remove_transport_sse(
    streamable_server: LoopbackMcpServer,
) -> None:
    # Given a streamable-HTTP server configured with transport: sse
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"url": streamable_server.url, "internal": True, "transport": "sse"})
    # Then the error says the stream was refused and what to remove
    assert "when the HTTP+SSE stream was opened" in str(error.value)
    assert "remove 'transport: sse'" in str(error.value)


def test_a_stdio_server_that_exits_at_once_is_reported_with_what_it_wrote() -> None:
    # Given a stdio entry whose command fails before speaking MCP
    entry = {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no such server here')"]}
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build(entry)
    # Then the error names the command line and quotes its stderr
    assert str(error.value).startswith(f"mcp {sys.executable} -c ")
    assert str(error.value).endswith("it wrote: no such server here")


def failing_with_env(name: str) -> dict[str, Any]:
    """A stdio entry whose command writes the value of its environment variable ``name`` to stderr and exits."""
    script = f"import os, sys; sys.exit('auth failed for token ' + os.environ[{name!r}])"
    return {"command": sys.executable, "args": ["-c", script]}


def test_a_literal_env_credential_is_redacted_from_the_quoted_stderr() -> None:
    # Given a stdio server given its token in env, which writes it to stderr and exits
    entry = {**failing_with_env("GH_TOKEN"), "env": {"GH_TOKEN": "ghp_literal-token-4d9e1a"}}
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build(entry)
    # Then the quoted stderr holds the redaction mark, not the token
    assert str(error.value).endswith("it wrote: auth failed for token ***")


def test_an_env_value_may_be_an_ssm_reference_resolved_and_redacted() -> None:
    # Given a token stored in SSM and a stdio server given the reference in env
    with mock_aws():
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name="/stepwise/gh-token", Value="ghp_from-ssm-7c21b0", Type="SecureString"
        )
        entry = {**failing_with_env("GH_TOKEN"), "env": {"GH_TOKEN": "ssm:/stepwise/gh-token"}}
        # When the registry is built
        with pytest.raises(ConfigError) as error:
            build(entry)
    # Then the server received the stored token (it wrote something redacted), which is not quoted
    assert str(error.value).endswith("it wrote: auth failed for token ***")


def test_a_stdio_command_that_does_not_exist_is_reported_as_not_started(tmp_path: Path) -> None:
    # Given a stdio entry naming a missing executable
    missing = str(tmp_path / "mcp-server-missing")
    # When the registry is built
    with pytest.raises(ConfigError) as error:
        build({"command": missing})
    # Then the error says the server could not be started
    assert f"the stdio MCP server {missing!r} could not be started" in str(error.value)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"url": "https://mcp.example.com/mcp", "command": "srv"}, "give exactly one of 'url'"),
        ({}, "give exactly one of 'url'"),
        ({"url": "https://mcp.example.com/mcp", "args": ["-v"]}, "args, env and cwd are for a stdio server"),
        ({"command": "srv", "headers": {"X-Team": "a"}}, "give a stdio server its credential in 'env'"),
        ({"command": "srv", "transport": "sse"}, "transport: sse needs a 'url'"),
        ({"url": "https://mcp.example.com/mcp", "transport": "stdio"}, "transport: stdio needs a 'command'"),
    ],
)
def test_an_entry_mixing_http_and_stdio_settings_is_refused_with_the_reason(entry: dict[str, Any], reason: str) -> None:
    # Given an mcp entry whose settings contradict each other
    # When it is parsed
    with pytest.raises(ConfigError) as error:
        parse_tools_config({"mcp": [entry]})
    # Then the error says why
    assert reason in str(error.value)


def test_a_server_is_listed_and_called_from_a_thread_that_runs_an_event_loop(
    streamable_server: LoopbackMcpServer,
) -> None:
    # Given a caller whose thread already runs an event loop (a notebook, an async application)
    async def from_the_loop() -> tuple[list[str], str]:
        # When it lists and calls the server's tools through the synchronous registry
        registry = build({"url": streamable_server.url, "internal": True})
        observation = ToolInvoker(registry).invoke(call("add", a=2, b=3))
        return registry.names(), observation.content

    # Then both work as from any other thread
    assert asyncio.run(from_the_loop()) == (["add"], "5")
