"""What `stepwise config check` says of each profile's governance: its tool policy and guardrails, listed,
and the warnings about them that need no Cedar nor any AWS call (a budget that asks about nothing, a Bedrock
guardrail whose ARN the deployment must grant).

Kept apart from `stepwise.config.check`, which builds the tools; this module only reads the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepwise.config.guardrails import BedrockRule, GuardrailPoint

if TYPE_CHECKING:
    from stepwise.config.guardrails import Guardrails
    from stepwise.config.model import AgentProfile

_POINTS: tuple[GuardrailPoint, ...] = ("input", "tool_results", "output")


@dataclass(frozen=True)
class ProfileGovernance:
    """A profile's governance as the check lists it: the policy (where it is read and its mode), the
    guardrails' mode and each point's rules with their action, the Bedrock guardrails named, and what the
    profile does at its budget."""

    policy: str | None = None
    policy_mode: str | None = None
    guardrails_mode: str | None = None
    rules: dict[str, list[str]] = field(default_factory=dict)
    bedrock_guardrails: list[str] = field(default_factory=list)
    on_budget: str = "end"
    # `online_evals`: the share of runs evaluated, the checks' keys, the judge (None without online evals)
    online_evals: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data: `policy` is None without a policy, `guardrails` None without guardrails."""
        policy = {"source": self.policy, "mode": self.policy_mode} if self.policy is not None else None
        guardrails = (
            {"mode": self.guardrails_mode, **self.rules, "bedrock_guardrails": self.bedrock_guardrails}
            if self.guardrails_mode is not None
            else None
        )
        return {
            "policy": policy,
            "guardrails": guardrails,
            "on_budget": self.on_budget,
            "online_evals": self.online_evals,
        }

    def lines(self) -> list[str]:
        """The profile's governance for a person, one fact a line (none when it has none)."""
        lines = []
        if self.policy is not None:
            lines.append(f"tool policy: {self.policy} (policy_mode: {self.policy_mode})")
        if self.guardrails_mode is not None:
            points = "; ".join(f"{point}: {', '.join(rules)}" for point, rules in self.rules.items() if rules)
            lines.append(f"guardrails ({self.guardrails_mode}): {points or 'no rules'}")
        if self.on_budget != "end":
            lines.append(f"at its budget: {self.on_budget}")
        if self.online_evals is not None:
            judge = self.online_evals["judge"]
            checks = ", ".join(self.online_evals["checks"]) or "no checks"
            lines.append(
                f"online evals: {self.online_evals['sample']:.0%} of runs; checks {checks}"
                + (f"; rubric graded by {judge}" if judge else "")
            )
        return lines


def profile_governance(profile: AgentProfile) -> ProfileGovernance:
    """The governance of `profile` as the check lists it."""
    policy = None
    if profile.policy is not None:
        from stepwise.config.tool_policy import is_policy_file

        policy = profile.policy.strip() if is_policy_file(profile.policy) else "inline Cedar text"
    guardrails = profile.guardrails
    return ProfileGovernance(
        policy=policy,
        policy_mode=profile.policy_mode if policy is not None else None,
        guardrails_mode=guardrails.mode if guardrails is not None else None,
        rules=_rules(guardrails) if guardrails is not None else {},
        bedrock_guardrails=[f"{ref.id}:{ref.version}" for ref in guardrails.bedrock_guardrails()]
        if guardrails is not None
        else [],
        on_budget=profile.limits.on_budget,
        online_evals=_online_evals(profile),
    )


def _online_evals(profile: AgentProfile) -> dict[str, Any] | None:
    online = profile.online_evals
    if online is None:
        return None
    checks = list(online.expect.model_dump(exclude_none=True))
    return {"sample": online.sample, "checks": checks, "judge": online.judge}


def _rules(guardrails: Guardrails) -> dict[str, list[str]]:
    """Each point's rules in order, each named as the trace names it, with its action (a Bedrock guardrail
    decides its own)."""
    return {
        point: [
            rule.name if isinstance(rule, BedrockRule) else f"{rule.name} ({rule.action})"
            for rule in guardrails.rules(point)
        ]
        for point in _POINTS
    }


def governance_warnings(name: str, profile: AgentProfile) -> list[str]:
    """What deserves a look in the profile's governance: a budget that asks with no budget to reach."""
    limits = profile.limits
    if limits.on_budget == "ask" and limits.max_total_tokens is None and limits.max_cost_usd is None:
        return [
            f"profiles.{name}.limits.on_budget is ask, but the profile sets neither max_total_tokens nor "
            "max_cost_usd: its runs wait at a budget only when a request sets one"
        ]
    return []


def bedrock_grant_notes(governance: dict[str, ProfileGovernance]) -> list[str]:
    """One reminder when some profile names a Bedrock guardrail: the deployment must grant it."""
    named = sorted({ref for profile in governance.values() for ref in profile.bedrock_guardrails})
    if not named:
        return []
    return [
        f"Bedrock guardrails {', '.join(named)}: on AWS, deploy with each one's ARN in the template parameter "
        "BedrockGuardrailArns (docs/guardrails.md); a guardrail not listed is denied at run time, which blocks"
    ]
