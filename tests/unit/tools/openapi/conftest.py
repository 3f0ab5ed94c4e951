"""Helpers for OpenAPI import tests: the fixture documents and a registry built from one source."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolSpec
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from stepwise.tools.observation import ToolObservation
from tests.support.tool_server import RecordedRequest, ScriptableToolServer
from tests.unit.tools.config_builders import call

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"

REAL = FIXTURES / "real"

ImportSource = Callable[..., ToolRegistry]
ImportReal = Callable[..., ToolRegistry]


@pytest.fixture
def import_source() -> ImportSource:
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
            secret_resolver=secret_resolver,
            s3_client=s3_client,
        )

    return build


def specs_by_name(registry: ToolRegistry) -> dict[str, ToolSpec]:
    """The registry's specs by tool name, in order."""
    return {spec.name: spec for spec in registry.specs()}


@pytest.fixture(scope="module")
def real_api_server() -> Iterator[ScriptableToolServer]:
    """The real APIs' stand-in, shared by a module's tests (importing a large document takes a while)."""
    with ScriptableToolServer() as server:
        yield server


@pytest.fixture(scope="module")
def import_real(
    tmp_path_factory: pytest.TempPathFactory, real_api_server: ScriptableToolServer
) -> Iterator[ImportReal]:
    """Build a registry from one real document (tests/fixtures/openapi/real), its base URL the stand-in's.

    Each document is unpacked once, on first use, into a directory the loader reads it from; extra
    keywords (``include``, ``exclude``) go into the source's entry.
    """
    directory = tmp_path_factory.mktemp("real-openapi")
    built: list[ToolRegistry] = []

    def build(name: str, **entry: Any) -> ToolRegistry:
        document = directory / name
        if not document.exists():
            document.write_bytes(gzip.decompress((REAL / f"{name}.gz").read_bytes()))
        source = {"source": name, "baseUrl": real_api_server.url, "internal": True, **entry}
        built.append(build_tool_registry(parse_tools_config({"openapi": [source]}), config_dir=directory))
        return built[-1]

    yield build
    for registry in built:
        registry.close()


def sent_by(
    server: ScriptableToolServer, registry: ToolRegistry, name: str, **arguments: Any
) -> tuple[ToolObservation, RecordedRequest]:
    """What calling tool ``name`` of ``registry`` observed, and the one request it sent to ``server``."""
    before = len(server.requests)
    observation = ToolInvoker(registry).invoke(call(name, **arguments))
    (sent,) = server.requests[before:]
    return observation, sent


def parameters_of(registry: ToolRegistry, name: str) -> dict[str, Any]:
    """The parameters schema the model is offered for tool ``name``."""
    (spec,) = registry.specs([name])
    return spec.parameters
