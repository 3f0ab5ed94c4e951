"""`stepwise config check` lists each profile's governance (tool policy, guardrails, budget) and warns about
a budget that asks with nothing to ask about, and reminds that a Bedrock guardrail's ARN must be granted."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml

from stepwise.cli import main

SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}
GOVERNED = {
    "model": "m",
    "tools": ["calculator"],
    "policy": '@id("all") permit(principal, action, resource);',
    "policy_mode": "log_only",
    "guardrails": {
        "mode": "enforce",
        "tool_results": [{"pii": ["card", "iban"], "action": "redact"}],
        "output": [{"deny": ["secret"], "label": "secrets"}, {"bedrock": {"id": "gr1a2b3c4d5e", "version": "3"}}],
    },
    "limits": {"on_budget": "ask"},
    "online_evals": {"sample": 0.25, "expect": {"answer_contains": "done", "max_iterations": 3}},
}


def check(tmp_path: Path, *options: str) -> str:
    """`stepwise config check` on a configuration with a governed profile and a plain one; its output."""
    config = {
        "models": {"m": SCRIPTED},
        "tools": {"builtin": ["calculator"]},
        "default_profile": "governed",
        "profiles": {"governed": GOVERNED, "plain": {"model": "m"}},
    }
    path = tmp_path / "stepwise.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = io.StringIO()
    assert main(["config", "check", str(path), *options], out=out) == 0
    return out.getvalue()


def test_the_json_report_lists_each_profiles_policy_guardrails_and_budget(tmp_path: Path) -> None:
    # Given a profile with an inline policy in log_only, guardrails at two points and a budget that asks
    # When the configuration is checked with --json
    report = json.loads(check(tmp_path, "--json"))
    # Then the governed profile's governance is listed rule by rule, the plain profile's is empty
    governed, plain = report["profiles"]["governed"], report["profiles"]["plain"]
    assert governed["policy"] == {"source": "inline Cedar text", "mode": "log_only"}
    assert governed["guardrails"] == {
        "mode": "enforce",
        "input": [],
        "tool_results": ["pii:card,iban (redact)"],
        "output": ["deny:secrets (block)", "bedrock:gr1a2b3c4d5e:3"],
        "bedrock_guardrails": ["gr1a2b3c4d5e:3"],
    }
    assert governed["on_budget"] == "ask"
    assert (plain["policy"], plain["guardrails"], plain["on_budget"]) == (None, None, "end")
    assert governed["online_evals"] == {"sample": 0.25, "checks": ["answer_contains", "max_iterations"], "judge": None}
    assert plain["online_evals"] is None
    # And the budget that asks with no budget is warned about, the Bedrock guardrail's grant reminded
    assert any("profiles.governed.limits.on_budget is ask" in warning for warning in report["warnings"])
    assert any("gr1a2b3c4d5e:3" in note and "BedrockGuardrailArns" in note for note in report["notes"])


def test_the_report_for_a_person_shows_the_governance_under_its_profile(tmp_path: Path) -> None:
    # Given the same configuration
    # When it is checked for a person
    text = check(tmp_path)
    # Then the governed profile's section names its policy, guardrails and budget, the plain one's none
    governed = text[text.index("profile governed") : text.index("profile plain")]
    assert "tool policy: inline Cedar text (policy_mode: log_only)" in governed
    assert "guardrails (enforce): tool_results: pii:card,iban (redact); output: deny:secrets (block), " in governed
    assert "at its budget: ask" in governed
    assert "online evals: 25% of runs; checks answer_contains, max_iterations" in governed
    plain = text[text.index("profile plain") :]
    assert "tool policy" not in plain and "guardrails (" not in plain and "online evals" not in plain
    assert "warning: profiles.governed.limits.on_budget is ask" in text
