"""``stepwise config check`` on large tool sets: schemas reduced for size, and profiles that get find_tools.

The large tool set is Stripe's published OpenAPI description (tests/fixtures/openapi/real, source in
its README).
"""

from __future__ import annotations

import gzip
import io
import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.cli import main

STRIPE = Path(__file__).resolve().parents[2] / "fixtures" / "openapi" / "real" / "stripe-2020-03-02.json.gz"
SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}


def check(directory: Path, config: dict[str, Any], *options: str) -> tuple[int, str]:
    """Write the configuration, run ``stepwise config check`` on it; its exit code and standard output."""
    path = directory / "stepwise.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    out = io.StringIO()
    code = main(["config", "check", str(path), *options], out=out)
    return code, out.getvalue()


def stripe_config(directory: Path, **tools: Any) -> dict[str, Any]:
    """Stripe's document in ``directory``, imported by a configuration with one profile using all of it."""
    (directory / "stripe.json").write_bytes(gzip.decompress(STRIPE.read_bytes()))
    openapi = [{"source": "stripe.json", "baseUrl": "https://api.stripe.com"}]
    return {"models": {"m": SCRIPTED}, "tools": {"openapi": openapi, **tools}, "profiles": {"default": {"model": "m"}}}


def test_tools_reduced_for_size_are_noted_and_the_search_is_announced(tmp_path: Path) -> None:
    # Given a configuration importing Stripe's 355 operations with the default limits
    # When it is checked
    code, output = check(tmp_path, stripe_config(tmp_path))
    # Then the tools still over 16 KB once trimmed are noted as offered reduced, with their sizes
    assert code == 0
    assert (
        "note: reduced PostIssuingCards from 27637 to 661 bytes (26306 after trimming, over the limit): removed "
        "descriptions at depth 4, descriptions at depth 3, descriptions at depth 2, the schemas of optional fields; "
        "find_tools offers its full schema on request"
    ) in output
    # And the profile says its model is offered find_tools rather than its 355 tools
    assert (
        "profile default (model m, the default): 355 tools\n"
        "  more than tool_search.threshold=32: the model is offered find_tools (5 tools per search) "
        "and the tools it finds, not all 355\n"
    ) in output


def test_a_larger_schema_limit_keeps_every_tool(tmp_path: Path) -> None:
    # Given the same configuration with maxSchemaBytes raised to 64 KB and a threshold of 128
    config = stripe_config(tmp_path, maxSchemaBytes=65536)
    config["profiles"]["default"]["tool_search"] = {"threshold": 128, "results": 10}
    # When it is checked with --json
    code, output = check(tmp_path, config, "--json")
    report = json.loads(output)["profiles"]["default"]
    # Then all 355 tools are offered through find_tools, with the settings given
    assert code == 0
    assert len(report["tools"]) == 355
    assert report["find_tools"] == {"threshold": 128, "results": 10}


def test_a_tool_named_find_tools_in_a_profile_that_needs_the_search_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a deployer tool called find_tools beside two built-ins, and a threshold of 2
    module = f"deployer_tools_{uuid.uuid4().hex[:8]}"
    source = '''
        from stepwise.tools import tool

        @tool
        def find_tools(query: str) -> str:
            """Find things."""
            return query
    '''
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    tools = {"builtin": ["calculator", "current_time"], "python": [module]}
    profile = {"model": "m", "tool_search": {"threshold": 2, "results": 1}}
    config = {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": profile}}
    # When it is checked
    code, _ = check(tmp_path, config)
    # Then it exits 1 naming the profile and why the name cannot be used
    assert code == 1
    assert "profiles.default.tools: a tool is named find_tools, the name of the tool search" in capsys.readouterr().err


def test_a_tool_named_find_tools_beside_a_tool_offered_reduced_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a deployer tool called find_tools beside an API operation whose 200-value enum passes a 1 KB
    # maxSchemaBytes even trimmed (so it is offered reduced), within the search threshold
    module = f"deployer_tools_{uuid.uuid4().hex[:8]}"
    source = '''
        from stepwise.tools import tool

        @tool
        def find_tools(query: str) -> str:
            """Find things."""
            return query
    '''
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    category = {"name": "category", "in": "query", "required": True, "schema": {"enum": [f"c{i}" for i in range(200)]}}
    operation = {"operationId": "listItems", "parameters": [category], "responses": {"200": {"description": "ok"}}}
    document = {"openapi": "3.1.0", "info": {"title": "Items", "version": "1"}, "paths": {"/items": {"get": operation}}}
    openapi = [{"document": document, "baseUrl": "https://api.example.com"}]
    tools = {"openapi": openapi, "python": [module], "maxSchemaBytes": 1024}
    config = {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}}
    # When it is checked
    code, _ = check(tmp_path, config)
    # Then it exits 1 naming the profile and the tool that needs the name
    assert code == 1
    assert "profiles.default.tools: a tool is named find_tools, the name of the tool that offers the full schemas" in (
        capsys.readouterr().err
    )
