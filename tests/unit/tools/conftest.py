"""Fixtures for tool tests: loopback tool servers, an HTTP client, and an invoker builder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.credentials import SecretResolver
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker


@pytest.fixture
def tool_server() -> Iterator[ScriptableToolServer]:
    """The API under test, on a free loopback port; echoes requests unless told otherwise."""
    with ScriptableToolServer() as server:
        yield server


@pytest.fixture
def attacker_server() -> Iterator[ScriptableToolServer]:
    """A second loopback server on another port: anything it records is a request that escaped."""
    with ScriptableToolServer() as server:
        yield server


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    """The client tools send with; closed after the test."""
    with httpx.Client(follow_redirects=False, trust_env=False) as client:
        yield client


@pytest.fixture
def make_invoker(http_client: httpx.Client, tmp_path: Path) -> MakeInvoker:
    """Build an invoker from raw configuration, the way the ToolInvoke step will."""

    def build(
        raw_config: dict[str, Any],
        *,
        secret_resolver: SecretResolver | None = None,
        config_dir: Path | None = None,
        **invoker_options: Any,
    ) -> ToolInvoker:
        registry = build_tool_registry(
            parse_tools_config(raw_config),
            config_dir=config_dir or tmp_path,
            http_client=http_client,
            secret_resolver=secret_resolver,
        )
        return ToolInvoker(registry, **invoker_options)

    return build
