"""The tool policy's verdict on each call of a decision: the one place it is decided.

Parse asks for it once, when it makes a decision of tool calls, and stores the verdicts with the decision
(`StepRecord.verdicts`), after a `policy` step for each call the policy did not plainly permit. From the
stored decision, Parse gives each call its wait for approval (none for a refused call) and ToolInvoke
refuses a forbidden call before anything else: a retried or resumed step acts on the verdict stored, never
on a second evaluation. No policy, no verdicts: the calls run as the tools' configuration says.
"""

from __future__ import annotations

from stepwise.models.messages import ToolCall
from stepwise.models.policy import PolicyVerdict
from stepwise.models.run import RunMeta
from stepwise.models.state import RunSpend
from stepwise.models.step_record import StepRecord
from stepwise.steps.budgets import total_spend
from stepwise.steps.runtime import StepRuntime

# The error of the `tool` step of a call that was never sent: the policy refused it, or nobody approved it
# (`approval_refusal_error`). Its observation is Stepwise's notice, not anything a tool returned.
POLICY_REFUSAL_ERROR = "refused by policy"
_NOT_APPROVED_ERRORS = frozenset({"approval denied", "approval timed out"})


def approval_refusal_error(status: str) -> str:
    """The error of the `tool` step of a call that was not approved (`denied`, `timed_out`)."""
    return f"approval {status.replace('_', ' ')}"


def never_sent(step: StepRecord) -> bool:
    """Whether a trace step records a tool call that was never sent (refused by the policy, or not approved)."""
    return (
        step.kind == "tool"
        and step.ok is False
        and step.latency_ms is None
        and (step.error == POLICY_REFUSAL_ERROR or step.error in _NOT_APPROVED_ERRORS)
    )


def policy_verdicts(
    meta: RunMeta, calls: list[ToolCall], iteration: int, spend: RunSpend, runtime: StepRuntime
) -> list[PolicyVerdict | None] | None:
    """The profile's policy's verdict on each call, in order; None when the profile has no policy.

    A call of no tool of the profile (a name the model made up: the invoker says it is unknown) or of
    `find_tools` (Stepwise's own search over the profile's tools) is not the policy's to decide: None.
    """
    policy = runtime.tool_policy(meta.profile)
    if policy is None or not calls:
        return None
    from stepwise.governance.tool_policy import CallFacts

    names = runtime.profile(meta.profile).tools
    specs = {spec.name: spec for spec in runtime.tools().specs(names, full=True)}
    # what the run has spent as its budgets count it, its child runs' included: one figure for both
    tokens, usd = total_spend(spend)
    verdicts: list[PolicyVerdict | None] = []
    for call in calls:
        spec = specs.get(call.name)
        if spec is None:
            verdicts.append(None)
            continue
        facts = CallFacts(
            owner=meta.owner,
            tool=call.name,
            arguments=call.arguments,
            profile=meta.profile,
            iteration=iteration,
            tokens=tokens,
            usd=usd,
        )
        verdicts.append(policy.decide(facts, spec.parameters))
    return verdicts


def policy_steps(decision: StepRecord) -> list[StepRecord]:
    """The `policy` steps of a decision: one per call the policy refused, sent to an approver, or (under
    `log_only`) would have."""
    steps = []
    for index, (call, verdict) in enumerate(zip(decision.calls or [], decision.verdicts or [], strict=False)):
        if verdict is not None and verdict.noted:
            steps.append(
                StepRecord(
                    iteration=decision.iteration,
                    kind="policy",
                    n=index,
                    action=call["name"],
                    call_id=call["id"],
                    arguments=call.get("arguments"),
                    decision=verdict.effect,
                    note=_note(verdict),
                    policy=verdict,
                    started_at=decision.started_at,
                )
            )
    return steps


def _note(verdict: PolicyVerdict) -> str:
    would = "" if verdict.mode == "enforce" else "would have been (policy_mode: log_only) "
    what = "refused" if verdict.effect == "forbid" else "sent for approval"
    return f"{would}{what} {verdict.by_whom()}"


def verdict_of(decision: StepRecord | None, index: int) -> PolicyVerdict | None:
    """The stored verdict on the `index`-th call of a decision; None without a policy."""
    verdicts = decision.verdicts if decision is not None else None
    return verdicts[index] if verdicts is not None and index < len(verdicts) else None


def refusal_observation(call: ToolCall, verdict: PolicyVerdict) -> str:
    """What the model reads instead of a refused call's result."""
    return (
        f"The call to {call.name} was not run: it was refused {verdict.by_whom()}. "
        "Do not try it again with the same arguments; go on without its result."
    )
