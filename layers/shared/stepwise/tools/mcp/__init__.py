"""Tools of MCP servers (streamable HTTP, legacy HTTP+SSE or stdio), through the official ``mcp`` SDK.

The server's tools are listed when the registry is built (cold start) and each call opens its own MCP
session::

    tools = load_mcp_tools(server_config, secret_resolver=resolver)
"""

from stepwise.tools.mcp.client import McpClient
from stepwise.tools.mcp.tools import McpTool, load_mcp_tools, result_text

__all__ = ["McpClient", "McpTool", "load_mcp_tools", "result_text"]
