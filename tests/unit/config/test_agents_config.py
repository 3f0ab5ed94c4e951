"""A profile's `agents:`: the profiles it may delegate to, checked as a graph when the configuration loads
(and so by `stepwise config check`): every agent a profile, no cycle, no agent named like a tool."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.cli import main
from stepwise.config.agents import AgentRef
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError

SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}


def config_of(profiles: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"models": {"m": SCRIPTED}, "profiles": profiles, "default_profile": next(iter(profiles)), **top}


def test_an_agent_is_named_or_written_out_and_a_named_one_takes_the_defaults() -> None:
    # Given a profile listing one agent by name and one written out
    profiles = {
        "lead": {
            "model": "m",
            "agents": ["researcher", {"profile": "writer", "description": "Writes.", "max_iterations": 2}],
        },
        "researcher": {"model": "m"},
        "writer": {"model": "m"},
    }
    # When the configuration is read
    config = StepwiseConfig.from_mapping(config_of(profiles))
    # Then both are agents, the short form with no description or iteration cap of its own; the depth is 3
    assert config.profiles["lead"].agent_refs == [
        AgentRef(profile="researcher"),
        AgentRef(profile="writer", description="Writes.", max_iterations=2),
    ]
    assert config.max_agent_depth == 3


@pytest.mark.parametrize(
    ("profiles", "problem"),
    [
        (
            {
                "a": {"model": "m", "agents": ["b"]},
                "b": {"model": "m", "agents": [{"profile": "c"}]},
                "c": {"model": "m", "agents": ["a"]},
            },
            "profiles.a.agents: a profile cannot reach itself through its agents: a -> b -> c -> a",
        ),
        (
            {"a": {"model": "m", "agents": ["a"]}},
            "profiles.a.agents: a profile cannot reach itself through its agents: a -> a",
        ),
        ({"a": {"model": "m", "agents": ["ghost"]}}, "profiles.a.agents.0.profile: 'ghost' is not one of the profiles"),
        (
            {"a": {"model": "m", "tools": ["b"], "agents": ["b"]}, "b": {"model": "m"}},
            "profiles.a.agents.0.profile: 'b' is also one of the profile's tools",
        ),
    ],
    ids=["cycle", "itself", "unknown", "named-like-a-tool"],
)
def test_a_delegation_graph_with_a_cycle_or_an_unknown_agent_is_refused_naming_the_field(
    profiles: dict[str, Any], problem: str
) -> None:
    # Given a configuration whose agents make a cycle, or name what is not a profile
    # When it is read
    with pytest.raises(ConfigError) as raised:
        StepwiseConfig.from_mapping(config_of(profiles))
    # Then the error names the field and the path or the name
    assert problem in str(raised.value)


def test_config_check_refuses_a_cycle_of_agents(tmp_path: Path) -> None:
    # Given a configuration file where two profiles delegate to each other
    profiles = {"a": {"model": "m", "agents": ["b"]}, "b": {"model": "m", "agents": ["a"]}}
    path = tmp_path / "stepwise.yaml"
    path.write_text(yaml.safe_dump(config_of(profiles)), encoding="utf-8")
    # When `stepwise config check` reads it
    code = main(["config", "check", str(path)], out=io.StringIO())
    # Then it fails
    assert code != 0
