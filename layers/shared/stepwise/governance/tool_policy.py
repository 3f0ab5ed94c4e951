"""A profile's tool policy, parsed once, and its verdict on one tool call.

The request Cedar evaluates: principal `Stepwise::Caller::"<owner>"`, action `Stepwise::Action::"call_tool"`,
resource `Stepwise::Tool::"<tool>"`, context `{arguments, profile, iteration, spent: {tokens, usd}}`, with
`usd` a Cedar `decimal` (four places) and the arguments typed by the tool's JSON schema
(`stepwise.governance.cedar_values`). No entities are needed: callers and tools have no attributes or parents.

The verdict fails closed: a policy that cannot be evaluated on a call (an argument of a type the policy
does not expect, a value Cedar cannot hold) refuses it, since Cedar would otherwise skip the broken
`forbid` and let a `permit` through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import cedarpy

from stepwise.governance.cedar_values import Unrepresentable, cedar_value, decimal_value
from stepwise.models.policy import PolicyMode, PolicyVerdict

NAMESPACE = "Stepwise"
ACTION = {"type": f"{NAMESPACE}::Action", "id": "call_tool"}
APPROVAL_ANNOTATION = "approval"
APPROVAL_REQUIRED = "required"


@dataclass(frozen=True)
class CallFacts:
    """What the policy sees of one call."""

    owner: str
    tool: str
    arguments: dict[str, Any]
    profile: str
    iteration: int
    tokens: int
    usd: float | None


class ToolPolicy:
    """One profile's parsed policy set and the annotations of its policies; `ValueError` for text Cedar
    cannot parse."""

    def __init__(self, text: str, mode: PolicyMode) -> None:
        self.mode: PolicyMode = mode
        self._policies = cedarpy.PolicySet.from_str(text)
        document = json.loads(cedarpy.policies_to_json_str(text))
        self._annotations: dict[str, dict[str, str]] = {
            policy_id: policy.get("annotations") or {} for policy_id, policy in document["staticPolicies"].items()
        }

    def name_of(self, policy_id: str) -> str:
        """A policy's `@id` annotation, or Cedar's own id without one."""
        return self._annotations.get(policy_id, {}).get("id") or policy_id

    def decide(self, facts: CallFacts, parameters: dict[str, Any]) -> PolicyVerdict:
        """The policy's verdict on the call; `parameters` is the tool's JSON schema."""
        try:
            context = {
                "arguments": cedar_value(facts.arguments, parameters),
                "profile": facts.profile,
                "iteration": facts.iteration,
                "spent": {"tokens": facts.tokens, "usd": decimal_value(round(facts.usd or 0.0, 4), where="spent.usd")},
            }
        except Unrepresentable as exc:
            return PolicyVerdict(effect="forbid", mode=self.mode, reason=f"not evaluated: {exc}")
        request = {
            "principal": {"type": f"{NAMESPACE}::Caller", "id": facts.owner},
            "action": ACTION,
            "resource": {"type": f"{NAMESPACE}::Tool", "id": facts.tool},
            "context": context,
        }
        result = cedarpy.is_authorized(request, self._policies, [])
        diagnostics = result.diagnostics
        if diagnostics.errors:
            return PolicyVerdict(
                effect="forbid",
                mode=self.mode,
                reason="the policy could not be evaluated on this call: " + "; ".join(diagnostics.errors),
            )
        names = [self.name_of(policy_id) for policy_id in diagnostics.reasons]
        if not result.allowed:
            reason = None if names else "no permit matched"
            return PolicyVerdict(effect="forbid", policies=names, mode=self.mode, reason=reason)
        approval = [
            self.name_of(policy_id)
            for policy_id in diagnostics.reasons
            if self._annotations.get(policy_id, {}).get(APPROVAL_ANNOTATION) == APPROVAL_REQUIRED
        ]
        if approval:
            return PolicyVerdict(effect="approval", policies=approval, mode=self.mode)
        return PolicyVerdict(effect="permit", policies=names, mode=self.mode)
