"""Helpers for OpenAPI import tests: the fixture documents and a registry built from one source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.credentials import SecretResolver
from stepwise.models.messages import ToolSpec
from stepwise.tools import ToolRegistry, build_tool_registry

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"

ImportSource = Callable[..., ToolRegistry]


@pytest.fixture
def import_source(http_client: httpx.Client) -> ImportSource:
    """Build a registry from one ``openapi:`` entry; documents are read from the fixtures directory."""

    def build(
        entry: dict[str, Any],
        *,
        config_dir: Path = FIXTURES,
        secret_resolver: SecretResolver | None = None,
        s3_client: Any = None,
    ) -> ToolRegistry:
        return build_tool_registry(
            parse_tools_config({"openapi": [entry]}),
            config_dir=config_dir,
            http_client=http_client,
            secret_resolver=secret_resolver,
            s3_client=s3_client,
        )

    return build


def specs_by_name(registry: ToolRegistry) -> dict[str, ToolSpec]:
    """The registry's specs by tool name, in order."""
    return {spec.name: spec for spec in registry.specs()}
