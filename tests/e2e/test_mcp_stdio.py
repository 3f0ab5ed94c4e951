"""The reference MCP server ``mcp-server-time`` (from PyPI) run over stdio, as a deployer configures it.

The server is started as ``python -m mcp_server_time`` with the test's own interpreter, so no PATH lookup
is involved. Each MCP session starts the server (about a second), so the module lists its tools once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from tests.e2e.conftest import scripted_model
from tests.unit.tools.config_builders import call

TIME_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


@pytest.fixture(scope="module")
def time_tools() -> ToolRegistry:
    """The time server's tools, listed once over stdio."""
    return build_tool_registry(parse_tools_config({"mcp": [TIME_SERVER]}), config_dir=Path("."))


def test_the_time_servers_tools_are_listed_over_stdio_with_their_schemas(time_tools: ToolRegistry) -> None:
    # Given the reference time server configured by command
    # When its tools were listed
    # Then both of its tools are offered, get_current_time requiring a timezone
    assert time_tools.names() == ["get_current_time", "convert_time"]
    assert time_tools.specs(["get_current_time"])[0].parameters["required"] == ["timezone"]


def test_get_current_time_is_called_through_the_guarded_invoker(time_tools: ToolRegistry) -> None:
    # Given the time server's tools behind the invoker
    invoker = ToolInvoker(time_tools)
    # When the model asks for the time in Tokyo
    observation = invoker.invoke(call("get_current_time", timezone="Asia/Tokyo"))
    # Then the server's answer is the observation
    answer = json.loads(observation.content)
    assert observation.ok
    assert (answer["timezone"], answer["datetime"][-6:]) == ("Asia/Tokyo", "+09:00")


def test_a_run_in_the_local_engine_calls_the_stdio_server(tmp_path: Path, local_run: Callable[..., Any]) -> None:
    # Given a profile whose only tool source is the time server over stdio, and a model that calls it
    calls = [
        {
            "name": "convert_time",
            "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"},
        }
    ]
    answer = "Noon UTC is 17:30 in India."
    model = scripted_model({"tool_calls": calls}, {"content": answer}, native_tools=True)
    tools = {"mcp": [{**TIME_SERVER, "timeoutSeconds": 30}]}
    profiles = {"default": {"model": "m", "strategy": "function_calling"}}
    config = {"models": {"m": model}, "tools": tools, "profiles": profiles}
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    environment, _ = local_run(tmp_path)

    # When the question is asked
    meta, execution = environment.ask("What time is noon UTC in India?")

    # Then the observation is the server's conversion and the run succeeded with the model's answer
    observations = [m.content for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert json.loads(observations[0])["target"]["datetime"][11:16] == "17:30"
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", answer)
