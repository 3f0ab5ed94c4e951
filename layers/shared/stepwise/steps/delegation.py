"""Delegation decided with the calls: which calls of a decision are agent calls, each one's share of the
parent's time and budget, and the child run's id.

Parse asks once, when it makes a decision of tool calls, and stores the shares on the decision
(`StepRecord.delegations`); from the stored decision Parse gives each agent call its wait (the child's deadline
and a margin), and AwaitChildRun starts the child with that share. A retried or resumed step acts on the share
stored, never on a second computation.
"""

from __future__ import annotations

import hashlib
from typing import Any

from stepwise.config.agents import AgentRef, agent_tool_description
from stepwise.models.delegation import ChildAllotment
from stepwise.models.messages import ToolCall, ToolSpec
from stepwise.models.run import RunMeta
from stepwise.models.state import RunContext
from stepwise.models.step_record import StepRecord
from stepwise.steps.budgets import total_spend
from stepwise.steps.runtime import StepRuntime

# Of what is left of the parent's tokens and cost, the children of one decision share this part equally; the
# rest is the parent's, to read their answers and reply.
CHILDREN_SHARE = 0.8
# Of what is left of the parent's time, the parent keeps this part (between the two bounds, in seconds) after
# its children's deadline, for its own last model call and Format.
PARENT_TIME_RESERVE = 0.2
MIN_RESERVE_SECONDS = 5.0
MAX_RESERVE_SECONDS = 60.0
# A child with less time than this would only time out: the call is answered without starting one.
MIN_CHILD_SECONDS = 10.0
# How long past the child's deadline the parent still waits for its end to be recorded (its final round and
# Format run after the deadline).
WAIT_MARGIN_SECONDS = 120
MAX_WAIT_SECONDS = 3600
_ID_PREFIX_CHARS = 40


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the child run a call starts: derived from the parent's run id and the call's id, so every
    attempt of one call names the same child (at most 73 characters of `[A-Za-z0-9_-]`, a valid execution
    name), and a different call another one."""
    digest = hashlib.sha256(f"{parent_run_id}\x00{call_id}".encode()).hexdigest()[:32]
    return f"{parent_run_id[:_ID_PREFIX_CHARS]}-{digest}"


def agent_specs(profile_refs: list[AgentRef], runtime: StepRuntime) -> list[ToolSpec]:
    """The tool each agent of a profile is offered as: named after the profile, taking a question."""
    return [
        ToolSpec(
            name=ref.profile,
            description=agent_tool_description(ref, runtime.profile(ref.profile).description),
            parameters={
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "What to ask the agent, with all it needs to know."}
                },
                "required": ["question"],
            },
        )
        for ref in profile_refs
    ]


def question_of(arguments: dict[str, Any]) -> str | None:
    """The question an agent call asks, or None when its arguments hold no non-empty text `question`."""
    question = arguments.get("question")
    return question if isinstance(question, str) and question.strip() else None


def allotments(
    meta: RunMeta, run: RunContext, calls: list[ToolCall], runtime: StepRuntime
) -> list[ChildAllotment | None] | None:
    """Each call's share of the run's time and budget when it calls an agent (None for other calls, and for an
    agent call that may not start a child: past `max_agent_depth`, with too little time or budget left, or in a
    replay); None when no call is an agent's."""
    profile = runtime.profile(meta.profile)
    agents = [profile.agent_ref(call.name) is not None for call in calls]
    if not any(agents):
        return None
    if meta.replay is not None or meta.depth + 1 > runtime.config.max_agent_depth:
        # a replay answers agent calls from its recording; past the depth, no child starts
        return [None] * len(calls)
    share = child_share(run, runtime.clock(), sum(agents))
    return [share if is_agent else None for is_agent in agents]


def child_share(run: RunContext, now: float, children: int) -> ChildAllotment | None:
    """What each of `children` started together gets of what is left of `run`'s deadline and budget; None
    when that is too little to be worth a run."""
    left = run.deadline - now
    reserve = min(MAX_RESERVE_SECONDS, max(MIN_RESERVE_SECONDS, left * PARENT_TIME_RESERVE))
    deadline = run.deadline - reserve
    if deadline - now < MIN_CHILD_SECONDS:
        return None
    tokens, cost = total_spend(run.spend)
    max_tokens = None
    if run.max_total_tokens is not None:
        max_tokens = int((run.max_total_tokens - tokens) * CHILDREN_SHARE / children)
        if max_tokens < 1:
            return None
    max_cost = None
    if run.max_cost_usd is not None:
        max_cost = round((run.max_cost_usd - (cost or 0.0)) * CHILDREN_SHARE / children, 6)
        if max_cost <= 0:
            return None
    return ChildAllotment(deadline=deadline, max_total_tokens=max_tokens, max_cost_usd=max_cost)


def allotment_of(decision: StepRecord | None, index: int) -> ChildAllotment | None:
    """The stored share of the `index`-th call of a decision; None when it starts no child."""
    shares = decision.delegations if decision is not None else None
    return shares[index] if shares is not None and index < len(shares) else None


def child_wait_seconds(allotment: ChildAllotment | None, now: float) -> int | None:
    """How long the parent waits for the child (its deadline and a margin); None for a call with no child."""
    if allotment is None:
        return None
    return max(1, min(MAX_WAIT_SECONDS, int(allotment.deadline - now) + WAIT_MARGIN_SECONDS))
