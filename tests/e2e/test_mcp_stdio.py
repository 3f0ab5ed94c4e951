"""The reference MCP server ``mcp-server-time`` (from PyPI) run over stdio, as a deployer configures it.

The server is started as ``python -m mcp_server_time`` with the test's own interpreter, so no PATH lookup
is involved. A server is one process per configured command line per Python process, kept between calls;
the tests that count its starts run it through a launcher that records each process it starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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


SPAWN_COUNTER = Path(__file__).resolve().parents[1] / "support" / "spawn_counter.py"


def counted_time_server(count_file: Path, **settings: Any) -> dict[str, Any]:
    """The time server started through a launcher that writes each process id it starts to ``count_file``."""
    args = [str(SPAWN_COUNTER), str(count_file), "-m", "mcp_server_time", "--local-timezone", "UTC"]
    return {"command": sys.executable, "args": args, **settings}


def spawned(count_file: Path) -> list[int]:
    """The process ids the launcher started, in order."""
    return [int(line) for line in count_file.read_text(encoding="ascii").split()] if count_file.exists() else []


def test_twenty_calls_in_one_run_start_the_stdio_server_once(tmp_path: Path, local_run: Callable[..., Any]) -> None:
    # Given a model that calls the time server twenty times, in five turns of four parallel calls
    count_file = tmp_path / "spawns.txt"
    turn = {"tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "Europe/Paris"}}] * 4}
    model = scripted_model(*[turn] * 5, {"content": "It is time."}, native_tools=True)
    tools = {"mcp": [counted_time_server(count_file)]}
    profiles = {"default": {"model": "m", "strategy": "function_calling"}}
    (tmp_path / "stepwise.yaml").write_text(
        yaml.safe_dump({"models": {"m": model}, "tools": tools, "profiles": profiles}), encoding="utf-8"
    )
    environment, _ = local_run(tmp_path)
    # When the question is asked
    meta, _ = environment.ask("What time is it in Paris? Ask often.")
    # Then all twenty calls (and every listing of the tools) were served by one process
    observations = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert len(observations) == 20
    assert all(json.loads(m.content)["timezone"] == "Europe/Paris" for m in observations)
    assert (meta.status, len(spawned(count_file))) == ("SUCCEEDED", 1)


def test_a_stdio_server_that_died_is_started_again_for_the_next_call(tmp_path: Path) -> None:
    # Given the time server's tools, called once
    count_file = tmp_path / "spawns.txt"
    registry = build_tool_registry(parse_tools_config({"mcp": [counted_time_server(count_file)]}), config_dir=tmp_path)
    invoker = ToolInvoker(registry)
    assert invoker.invoke(call("get_current_time", timezone="UTC")).ok
    # When its process is killed
    (first,) = spawned(count_file)
    os.kill(first, signal.SIGKILL)
    _wait_until_gone(first)
    # Then the next call starts a new process and is answered
    observation = invoker.invoke(call("get_current_time", timezone="Asia/Tokyo"))
    assert observation.ok, observation.content
    assert len(spawned(count_file)) == 2


def test_a_stdio_server_left_idle_is_stopped_and_started_again_when_needed(tmp_path: Path) -> None:
    # Given a time server that is stopped after a second unused, called once
    count_file = tmp_path / "spawns.txt"
    config = {"mcp": [counted_time_server(count_file, idleTimeoutSeconds=1)]}
    invoker = ToolInvoker(build_tool_registry(parse_tools_config(config), config_dir=tmp_path))
    assert invoker.invoke(call("get_current_time", timezone="UTC")).ok
    (first,) = spawned(count_file)
    # When it is left unused past its idle timeout
    _wait_until_gone(first)
    # Then it is gone, and the next call starts it again
    assert invoker.invoke(call("get_current_time", timezone="UTC")).ok
    assert len(spawned(count_file)) == 2


def _wait_until_gone(pid: int, timeout: float = 10.0) -> None:
    """Wait until process ``pid`` has exited (and been reaped, or is a zombie)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").split(")")[-1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running after {timeout} s")


def test_the_stdio_server_is_stopped_when_its_process_exits(tmp_path: Path) -> None:
    # Given a process that lists and calls the time server, then exits
    count_file = tmp_path / "spawns.txt"
    program = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from stepwise.config.tool_sources import parse_tools_config\n"
        "from stepwise.tools import ToolInvoker, build_tool_registry\n"
        "from stepwise.models.messages import ToolCall\n"
        "config = parse_tools_config({'mcp': [json.loads(sys.argv[1])]})\n"
        "invoker = ToolInvoker(build_tool_registry(config, config_dir=Path('.')))\n"
        "call = ToolCall(id='c', name='get_current_time', arguments={'timezone': 'UTC'})\n"
        "assert invoker.invoke(call).ok\n"
    )
    server = json.dumps(counted_time_server(count_file))
    # When it has run
    completed = subprocess.run([sys.executable, "-c", program, server], capture_output=True, timeout=60, check=False)
    # Then the one server it started is gone with it
    assert completed.returncode == 0, completed.stderr[-2000:]
    (pid,) = spawned(count_file)
    _wait_until_gone(pid)
