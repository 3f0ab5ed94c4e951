"""An MCP server's tool listing is read once per process, however many times the tools are built."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import build_tool_registry
from tests.support.mcp_server import LoopbackMcpServer


def test_building_the_tools_again_asks_the_server_nothing(tmp_path: Path) -> None:
    # Given an MCP server whose tools were built once, as one handler's runtime builds them
    server = MCPServer("listing-once", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with LoopbackMcpServer(server) as running:
        config = parse_tools_config({"mcp": [{"url": running.url, "internal": True}]})
        first = build_tool_registry(config, config_dir=tmp_path)
        asked = len(running.requests)
        # When another handler of the same process builds them
        second = build_tool_registry(config, config_dir=tmp_path)
        # Then it has the same tools, and the server was not asked again
        assert second.names() == first.names() == ["echo"]
        assert asked > 0 and len(running.requests) == asked
