"""One run, three tool sources: an imported OpenAPI operation, a built-in tool and an MCP tool.

The real statemachine/agent.asl.json runs in the local engine with the real handlers; the OpenAPI
document is a file in the config directory, its API a loopback server, and the MCP server a real one
(the SDK's MCPServer) on loopback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from mcp.server.mcpserver import MCPServer

from tests.e2e.conftest import scripted_model
from tests.support.mcp_server import LoopbackMcpServer
from tests.support.tool_server import Json, ScriptableToolServer

WEATHER_DOCUMENT = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "weather-3.1.yaml"


def glossary_server() -> MCPServer:
    """An MCP server with one tool."""
    server = MCPServer("glossary", log_level="WARNING")

    @server.tool()
    def define(word: str) -> str:
        """Define a weather word."""
        return f"{word}: light, fine rain"

    return server


def test_a_model_calls_an_openapi_a_builtin_and_an_mcp_tool_in_one_run(
    tmp_path: Path, local_run: Callable[..., Any]
) -> None:
    with ScriptableToolServer() as weather_api, LoopbackMcpServer(glossary_server()) as glossary:
        # Given a config dir with the weather OpenAPI document, its API and an MCP server on loopback
        weather_api.on("/v3/weather/now.json", Json({"location": "Paris", "text": "drizzle", "temperature": 14}))
        shutil.copy(WEATHER_DOCUMENT, tmp_path)
        calls = [
            {"name": "get_weather_now", "arguments": {"location": "Paris", "language": "en", "unit": "c"}},
            {"name": "calculator", "arguments": {"expression": "14 * 9 / 5 + 32"}},
            {"name": "define", "arguments": {"word": "drizzle"}},
        ]
        answer = "Paris: 14 °C (57.2 °F) with drizzle, that is light, fine rain."
        model = scripted_model({"tool_calls": calls}, {"content": answer}, native_tools=True)
        tools = {
            "openapi": [{"source": "weather-3.1.yaml", "baseUrl": f"{weather_api.url}/v3", "internal": True}],
            "mcp": [{"url": glossary.url, "internal": True, "timeoutSeconds": 10}],
            "builtin": ["calculator"],
        }
        profiles = {"default": {"model": "m", "strategy": "function_calling"}}
        config = {"models": {"m": model}, "tools": tools, "profiles": profiles}
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        environment, listener = local_run(tmp_path)

        # When the question is asked
        meta, execution = environment.ask("What is the weather in Paris, in Fahrenheit, and what is drizzle?")

        # Then the OpenAPI operation reached the weather API with its query
        assert [(request.path, request.query) for request in weather_api.requests] == [
            ("/v3/weather/now.json", {"location": ["Paris"], "language": ["en"], "unit": ["c"]})
        ]
    # And the three calls ran as Map items, each observation from its own source, in call order
    observations = [m.content for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert listener.entered().count("InvokeTool") == 3
    assert json.loads(observations[0])["text"] == "drizzle"
    assert observations[1:] == ["57.2", "drizzle: light, fine rain"]
    # And the run succeeded with the model's answer after two model calls and three tool calls
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", answer)
    assert (meta.usage.llm_calls, meta.usage.tool_calls) == (2, 3)
