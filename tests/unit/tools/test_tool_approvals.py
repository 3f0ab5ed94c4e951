"""Which tools wait for approval: `requires_approval` on a tool source or one HTTP tool, read into the
registry with each tool's wait; mistakes named by field."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import build_tool_registry
from tests.unit.tools.config_builders import api_entry, endpoint

MODULE = '''
from stepwise.tools import tool


@tool
def delete_everything(confirm: bool) -> str:
    """Delete everything.

    Args:
        confirm: Really.
    """
    return "deleted"
'''


@pytest.fixture
def config_dir(tmp_path: Path) -> Iterator[Path]:
    """A config directory holding the module `approval_tools`; forgotten afterwards."""
    (tmp_path / "approval_tools.py").write_text(MODULE, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("approval_tools", None)
    if str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def test_each_source_and_tool_says_how_long_its_calls_wait_for_approval(config_dir: Path) -> None:
    # Given an API needing approval (one tool of it opting out, one with its own wait), and a module of
    # tools given as a mapping with the camelCase keys
    api = api_entry(
        "http://127.0.0.1:9",
        [
            endpoint("pay", "/pay"),
            endpoint("balance", "/balance", requires_approval=False),
            endpoint("close", "/close", approvalTimeoutSeconds=60),
        ],
        requires_approval=True,
        approval_timeout_seconds=120,
    )
    config = parse_tools_config(
        {
            "apis": [api],
            "python": [{"module": "approval_tools", "requiresApproval": True}],
            "builtin": ["calculator"],
        }
    )

    # When the registry is built
    registry = build_tool_registry(config, config_dir=config_dir)

    # Then each tool's wait is the one it or its source set (900 s by default), and others need none
    waits = {name: registry.approval_timeout(name) for name in registry.names()}
    assert waits == {"pay": 120, "balance": None, "close": 60, "delete_everything": 900, "calculator": None}


def test_a_profile_restricted_registry_keeps_the_waits_of_its_tools(config_dir: Path) -> None:
    # Given a registry where a module's tools need approval
    config = parse_tools_config(
        {"python": [{"module": "approval_tools", "requires_approval": True}], "builtin": ["calculator"]}
    )
    registry = build_tool_registry(config, config_dir=config_dir)

    # When it is restricted to a profile's tools / Then the tool kept still waits for approval
    assert registry.restricted_to(["delete_everything"]).approval_timeout("delete_everything") == 900


@pytest.mark.parametrize("seconds", [0, 3001, "soon"])
def test_an_approval_wait_out_of_bounds_is_refused_naming_the_field(seconds: object) -> None:
    # Given an MCP server whose approval wait is not 1-3000 seconds
    raw = {"mcp": [{"command": "server", "requires_approval": True, "approval_timeout_seconds": seconds}]}

    # When / Then parsing names the field
    with pytest.raises(ConfigError, match="approval_timeout_seconds"):
        parse_tools_config(raw)


def test_a_python_module_mapping_needs_a_module_name() -> None:
    # Given a python entry as a mapping whose module is not a module name
    raw = {"python": [{"module": "not a module", "requires_approval": True}]}

    # When / Then parsing refuses it, naming the python entry
    with pytest.raises(ConfigError, match="python"):
        parse_tools_config(raw)
