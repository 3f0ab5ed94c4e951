"""End-to-end fixtures: a configuration written to a temp dir, and the local environment running it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.asl import StateEvent
from stepwise.local.environment import LocalEnvironment
from stepwise.local.server import LocalApi
from stepwise.telemetry.observability import logger
from tests.support.openai_server import FakeOpenAIServer, chat_completion, script_of_its_own

ConfigWriter = Callable[..., Path]


def scripted_model(*turns: dict[str, Any], native_tools: bool = False) -> dict[str, Any]:
    """A scripted model config playing `turns` for every question."""
    return {
        "provider": "scripted",
        "scenarios": [{"turns": list(turns)}],
        "capabilities": {"native_tools": native_tools, "parallel_tools": native_tools},
    }


def react_action(tool: str, arguments: dict[str, Any], thought: str = "I need a tool.") -> dict[str, Any]:
    """A scripted turn in the ReAct JSON protocol asking for one tool."""
    import json

    block = json.dumps({"action": tool, "action_input": arguments})
    return {"content": f"Thought: {thought}\n```json\n{block}\n```"}


def react_answer(text: str) -> dict[str, Any]:
    """A scripted turn in the ReAct JSON protocol giving the final answer."""
    import json

    block = json.dumps({"action": "Final Answer", "action_input": text})
    return {"content": f"Thought: I can answer.\n```json\n{block}\n```"}


def native_assistant_config(
    base_url: str, *, timeout_seconds: int, more_profiles: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A configuration whose default profile `assistant` calls `current_time` natively on the
    OpenAI-compatible model at `base_url` (a loopback stand-in for the provider)."""
    model = {
        "provider": "openai",
        "base_url": base_url,
        "model": "gpt-fake",
        "api_key": "sk-provider",
        "timeout_seconds": timeout_seconds,
        "capabilities": {"native_tools": True, "parallel_tools": True, "json_mode": True},
    }
    assistant = {
        "model": "gpt",
        "strategy": "function_calling",
        "system_prompt": "You are the assistant.",
        "tools": ["current_time"],
    }
    return {
        "models": {"gpt": model},
        "tools": {"apis": [], "builtin": ["current_time"]},
        "profiles": {"assistant": assistant, **(more_profiles or {})},
        "default_profile": "assistant",
    }


def http_api(url: str, *tools: dict[str, Any], timeout_ms: int = 2000) -> dict[str, Any]:
    """An `apis:` entry for a loopback tool server."""
    return {"url": url, "internal": True, "maxExecutionTime": timeout_ms, "tools": list(tools)}


def get_tool(name: str, path: str, **properties: str) -> dict[str, Any]:
    """A GET tool whose parameters are the given string properties, all required."""
    return {
        "toolName": name,
        "description": f"{name} tool",
        "method": "GET",
        "path": path,
        "parameter": {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
            "required": list(properties),
        },
    }


# The chat-stream suites' slow final answer: long enough that a step is seen before the run ends.
SLOW_ANSWER_SECONDS = 2.0


def script_tool_then_slow_answer(server: FakeOpenAIServer, answer: str) -> None:
    """The model calls a tool at once, then takes its time to answer."""
    server.enqueue(body=chat_completion(tool_calls=[{"name": "current_time", "arguments": {}}]))
    server.enqueue(body=chat_completion(content=answer), delay_seconds=SLOW_ANSWER_SECONDS)


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(autouse=True)
def model_server_script(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test on the module's `model_server` starts with no reply queued, and what it leaves unread never reaches the
    next test (`script_of_its_own`). Not a failure here: some of these tests start a run only to be refused reading
    it, and end before its model call."""
    if "model_server" not in request.fixturenames:
        yield
        return
    with script_of_its_own(request.getfixturevalue("model_server"), must_be_read=False):
        yield


@pytest.fixture
def meter() -> Iterator[DynamoDBMeter]:
    """Counts the DynamoDB requests of clients created while it is installed (at the wire, botocore events)."""
    installed = DynamoDBMeter().install()
    yield installed
    installed.uninstall()


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    """Write a stepwise.yaml with one `default` profile using `model`; returns the config dir."""

    def write(
        model: dict[str, Any],
        *,
        apis: list[dict[str, Any]] | None = None,
        builtin: list[str] | None = None,
        strategy: str = "react",
        protocol: str | None = "react_json",
        limits: dict[str, Any] | None = None,
        **profile: Any,
    ) -> Path:
        profile_config: dict[str, Any] = {"model": "m", "strategy": strategy, **profile}
        if protocol and strategy == "react":
            profile_config["protocol"] = protocol
        if limits:
            profile_config["limits"] = limits
        config = {
            "models": {"m": model},
            "tools": {"apis": apis or [], "builtin": builtin or []},
            "profiles": {"default": profile_config},
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        return tmp_path

    return write


class RecordingListener:
    """Collects the engine's state events, as the execution history does."""

    def __init__(self) -> None:
        self.events: list[StateEvent] = []

    def __call__(self, event: StateEvent) -> None:
        self.events.append(event)

    def entered(self) -> list[str]:
        """The names of the states entered, in order (Map items included)."""
        return [event.state for event in self.events if event.type == "entered"]


@pytest.fixture
def verbose_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record at INFO and above, and the service's own logger at DEBUG."""
    previous = logger.log_level
    caplog.set_level(logging.INFO)
    logger.setLevel("DEBUG")
    yield caplog
    logger.setLevel(previous)


StoreChoice = tuple[str | None, str | None]


@pytest.fixture
def store() -> StoreChoice:
    """The store `local_run` uses, as (endpoint URL, table name); no endpoint is the in-memory moto server.

    A test module overrides it to run its scenarios against the session's DynamoDB Local as well.
    """
    return None, None


def parametrized_store(request: pytest.FixtureRequest, table_name: str) -> StoreChoice:
    """`store` for a fixture parametrized by "moto" and "dynamodb-local"."""
    if request.param == "dynamodb-local":
        return request.getfixturevalue("dynamodb_local"), table_name
    return None, table_name


@pytest.fixture
def local_run(write_config: ConfigWriter, store: StoreChoice) -> Iterator[Callable[..., Any]]:
    """Start a LocalEnvironment on a config (fast retries) and hand back (environment, listener)."""
    environments: list[LocalEnvironment] = []
    endpoint_url, table_name = store

    def start(config_dir: Path) -> tuple[LocalEnvironment, RecordingListener]:
        listener = RecordingListener()
        environment = LocalEnvironment(
            config_dir=config_dir,
            dynamodb_endpoint_url=endpoint_url,
            table_name=table_name,
            retry_interval_scale=0.0,
            listener=listener,
        )
        environments.append(environment.__enter__())
        return environment, listener

    yield start
    for environment in reversed(environments):
        environment.__exit__(None, None, None)


@contextmanager
def serve(config: dict[str, Any], config_dir: Path, **options: Any) -> Iterator[LocalApi]:
    """`stepwise serve` for `config` (written into `config_dir`), on a free loopback port, retrying without sleeping."""
    (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with LocalApi(config_dir=config_dir, retry_interval_scale=0.0, **options) as served:
        yield served
