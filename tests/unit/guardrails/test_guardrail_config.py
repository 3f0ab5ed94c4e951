"""The `guardrails:` section of a profile: what a valid one is, and errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.guardrails import BedrockRule, DenyRule, PiiRule
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError


def config_with(guardrails: dict[str, Any]) -> StepwiseConfig:
    model = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}
    profile = {"model": "m", "guardrails": guardrails}
    return StepwiseConfig.from_mapping({"models": {"m": model}, "profiles": {"default": profile}}, environ={})


def test_each_kind_of_rule_is_read_at_each_point() -> None:
    # Given one rule of each kind
    config = config_with(
        {
            "mode": "log_only",
            "input": [{"deny": ["(?i)ignore previous instructions"], "label": "injection"}],
            "tool_results": [{"pii": ["card", "iban"], "action": "redact"}],
            "output": [{"bedrock": {"id": "gr1a2b3c", "version": "2"}}],
        }
    )
    guardrails = config.profiles["default"].guardrails
    # Then each is its own rule type, named for the trace
    assert guardrails is not None and guardrails.mode == "log_only"
    assert isinstance(guardrails.input[0], DenyRule) and guardrails.input[0].name == "deny:injection"
    assert isinstance(guardrails.tool_results[0], PiiRule) and guardrails.tool_results[0].name == "pii:card,iban"
    assert isinstance(guardrails.output[0], BedrockRule) and guardrails.output[0].name == "bedrock:gr1a2b3c:2"
    assert [ref.id for ref in guardrails.bedrock_guardrails()] == ["gr1a2b3c"]


@pytest.mark.parametrize(
    ("rule", "field", "reason"),
    [
        ({"deny": ["[unclosed"]}, "guardrails.input.0.deny.deny", "pattern 0: not a regular expression: missing ]"),
        (
            {"deny": ["ok", "secret(?!s)"]},
            "guardrails.input.0.deny.deny",
            "pattern 1: a negative lookahead `(?!` is not supported: patterns run on RE2",
        ),
        ({"pii": ["passport"]}, "guardrails.input.0.pii.pii.0", "'email', 'phone', 'card', 'iban' or 'aws_key'"),
        ({"deny": ["x"], "action": "redact"}, "guardrails.input.0.deny.action", "'block'"),
        ({"words": ["x"]}, "guardrails.input.0", "a rule is one of"),
    ],
)
def test_a_bad_rule_is_a_config_error_naming_its_field(rule: dict[str, Any], field: str, reason: str) -> None:
    # When a profile's input rule is wrong
    with pytest.raises(ConfigError) as raised:
        config_with({"input": [rule]})
    # Then the error names the field and why
    assert f"profiles.default.{field}" in str(raised.value)
    assert reason in str(raised.value)
