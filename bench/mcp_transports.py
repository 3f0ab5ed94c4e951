"""Calls per second to the reference MCP server ``mcp-server-time`` over stdio, HTTP+SSE and streamable HTTP.

The same server (the package's own ``create_server``) is run three ways: as a stdio subprocess, as the
configuration starts it, and behind a loopback HTTP server speaking the legacy HTTP+SSE transport and
streamable HTTP. Each is called through Stepwise's MCP tools (listing, then sequential calls of
``get_current_time``): the listing is timed on its own (a stdio server's process starts then), the
first call too, and the next calls give calls per second.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from mcp_server_time.server import create_server

from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolCall
from stepwise.tools import ToolInvoker, build_tool_registry
from stepwise.tools.mcp.stdio_servers import STDIO_SERVERS
from tests.support.mcp_server import LoopbackMcpServer

CALLS = 100
_CALL = ToolCall(id="bench", name="get_current_time", arguments={"timezone": "Asia/Tokyo"})


def measure(server: dict[str, Any]) -> tuple[float, float, float]:
    """The listing's and the first call's milliseconds, and the calls per second of the next `CALLS`."""
    started = time.perf_counter()
    registry = build_tool_registry(parse_tools_config({"mcp": [server]}), config_dir=Path("."))
    listing_ms = (time.perf_counter() - started) * 1000
    invoker = ToolInvoker(registry)
    started = time.perf_counter()
    if not invoker.invoke(_CALL).ok:
        raise RuntimeError(f"the time server did not answer over {server}")
    first_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    for _ in range(CALLS):
        invoker.invoke(_CALL)
    return listing_ms, first_ms, CALLS / (time.perf_counter() - started)


def main() -> dict[str, float]:
    """Print one row per transport; return the calls per second by transport."""
    print(f"MCP transports: mcp-server-time, {CALLS} sequential calls after the first")
    # the servers log every request at INFO
    for noisy in ("mcp", "httpx", "httpx2", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    print(f"{'transport':<18}{'listing':>10}{'first call':>12}{'calls/s':>10}")
    rates: dict[str, float] = {}
    stdio = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("stdio", stdio),
        ("sse", "sse"),
        ("streamable-http", "streamable-http"),
    ]
    for name, entry in rows:
        if isinstance(entry, dict):
            listing_ms, first_ms, rate = measure(entry)
        else:
            with LoopbackMcpServer(create_server("UTC"), transport=entry) as running:  # type: ignore[arg-type]
                listing_ms, first_ms, rate = measure(
                    {"url": running.url, "internal": True, **({"transport": "sse"} if entry == "sse" else {})}
                )
        rates[name] = rate
        print(f"{name:<18}{listing_ms:>7.0f} ms{first_ms:>9.0f} ms{rate:>10.1f}")
    STDIO_SERVERS.stop_all()
    print(f"stdio / streamable HTTP: {rates['stdio'] / rates['streamable-http']:.1f}x")
    return rates


if __name__ == "__main__":
    main()
