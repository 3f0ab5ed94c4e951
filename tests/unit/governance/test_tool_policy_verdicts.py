"""The tool policy's verdict on one call: Cedar's decision, the `@approval` annotation, and a policy that
cannot be evaluated on the call's arguments refusing it (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.governance.tool_policy import CallFacts, ToolPolicy
from tests.conftest import PROJECT_ROOT

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
    "required": ["amount", "to"],
}
POLICY = """
@id("small") permit(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount.lessThanOrEqual(decimal("100.0")) };

@id("large") @approval("required") permit(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount.greaterThan(decimal("100.0")) && context.spent.usd.lessThan(decimal("1.0")) };

@id("outside") forbid(principal, action, resource == Stepwise::Tool::"transfer")
unless { context.arguments.to like "acct-*" };
"""


def facts(arguments: dict[str, Any], *, usd: float | None = 0.25) -> CallFacts:
    return CallFacts(
        owner="alice", tool="transfer", arguments=arguments, profile="payments", iteration=1, tokens=10, usd=usd
    )


@pytest.mark.parametrize(
    ("arguments", "usd", "verdict"),
    [
        pytest.param({"amount": 99.5, "to": "acct-1"}, 0.25, ("permit", ["small"]), id="a number within the cap"),
        pytest.param({"amount": 500, "to": "acct-1"}, 0.25, ("approval", ["large"]), id="a large amount asks"),
        pytest.param({"amount": 500, "to": "acct-1"}, 3.0, ("forbid", []), id="no permit matches: default deny"),
        pytest.param({"amount": 5, "to": "ext-9"}, None, ("forbid", ["outside"]), id="a forbid wins"),
    ],
)
def test_the_verdict_follows_cedar_and_the_approval_annotation(
    arguments: dict[str, Any], usd: float | None, verdict: tuple[str, list[str]]
) -> None:
    # Given the policy, enforced
    policy = ToolPolicy(POLICY, "enforce")
    # When a call is decided
    decided = policy.decide(facts(arguments, usd=usd), SCHEMA)
    # Then the verdict names its determining policies
    assert (decided.effect, decided.policies) == verdict


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"amount": "500", "to": "acct-1"}, id="a string where the policy compares a decimal"),
        pytest.param({"amount": 100.00001, "to": "acct-1"}, id="more places than a Cedar decimal holds"),
    ],
)
def test_a_call_the_policy_cannot_be_evaluated_on_is_refused(arguments: dict[str, Any]) -> None:
    # Given the policy, enforced
    policy = ToolPolicy(POLICY, "enforce")
    # When a call whose arguments the policy cannot read is decided
    decided = policy.decide(facts(arguments), SCHEMA)
    # Then it is refused, saying why
    assert (decided.effect, decided.refuses, decided.reason is not None) == ("forbid", True, True)


def test_under_log_only_a_forbidden_call_is_not_refused() -> None:
    # Given the policy in log_only mode
    policy = ToolPolicy(POLICY, "log_only")
    # When a forbidden call is decided
    decided = policy.decide(facts({"amount": 5, "to": "ext-9"}), SCHEMA)
    # Then the verdict says forbid, and the call is not refused
    assert (decided.effect, decided.refuses, decided.mode) == ("forbid", False, "log_only")


@pytest.mark.parametrize(
    ("arguments", "verdict"),
    [
        pytest.param({"amount": 100, "to": "acct-1"}, ("permit", ["transfers-up-to-100"]), id="up to 100 runs"),
        pytest.param(
            {"amount": 101, "to": "acct-1"}, ("approval", ["transfers-over-100-need-approval"]), id="above asks"
        ),
        pytest.param({"amount": 5, "to": "iban-77"}, ("forbid", ["company-accounts-only"]), id="never outside"),
    ],
)
def test_the_documented_example_policy_decides_as_documented(
    arguments: dict[str, Any], verdict: tuple[str, list[str]]
) -> None:
    # Given docs/payments.cedar, enforced, and `transfer` taking a whole amount
    policy = ToolPolicy((PROJECT_ROOT / "docs" / "payments.cedar").read_text(encoding="utf-8"), "enforce")
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}, "to": {"type": "string"}}}
    # When a transfer is decided
    decided = policy.decide(facts(arguments), schema)
    # Then the verdict is the one docs/tools.md describes
    assert (decided.effect, decided.policies) == verdict
