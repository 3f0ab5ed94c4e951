"""Fixtures for tool tests: loopback tool servers, per-origin HTTP clients, and an invoker builder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from stepwise.tools.http_clients import ClientsByOrigin
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
def http_clients() -> Iterator[ClientsByOrigin]:
    """The per-origin clients tools send with; closed after the test."""
    clients = ClientsByOrigin()
    yield clients
    clients.close()


@pytest.fixture
def make_invoker(tmp_path: Path) -> Iterator[MakeInvoker]:
    """Build an invoker from raw configuration, the way the ToolInvoke step will; registries closed after."""
    built: list[ToolRegistry] = []

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
            secret_resolver=secret_resolver,
        )
        built.append(registry)
        return ToolInvoker(registry, **invoker_options)

    yield build
    for registry in built:
        registry.close()
