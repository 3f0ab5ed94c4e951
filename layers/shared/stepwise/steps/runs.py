"""Creating a run: the META item and the opening messages, before its execution starts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, TypedDict, Unpack

from stepwise.config.language import Language
from stepwise.errors import RunAlreadyExists
from stepwise.models.messages import ChatMessage
from stepwise.models.run import (
    LISTED_QUESTION_CHARS,
    IntentOutcome,
    ReplayLink,
    RunBudget,
    RunLimits,
    RunMeta,
    RunOptions,
)
from stepwise.steps.context_window import cut_to
from stepwise.steps.guardrail_points import guard_input, guard_input_of_run
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.token_estimate import MESSAGE_OVERHEAD_TOKENS, message_tokens
from stepwise.store import SessionTurn

# Each earlier turn is two puts before the execution starts; past this many, older turns are dropped
# whatever their size, so starting a run in a long session of short turns stays quick.
MAX_SESSION_TURNS = 100
# A last answer cut shorter than this says too little to be worth carrying.
_MIN_CUT_ANSWER_TOKENS = 200


def new_run_id() -> str:
    """A fresh run id, valid as a Step Functions execution name."""
    return uuid.uuid4().hex


def execution_input(run_id: str, iteration: int = 0) -> dict[str, object]:
    """The state machine's input for a run: the payload contract at iteration 0, or at the last iteration a
    forked replay kept (its execution goes on from the next one)."""
    return {"run_id": run_id, "iteration": iteration, "final_round": False, "next": "start", "calls": []}


def start_input(meta: RunMeta) -> dict[str, object]:
    """The state machine's input that starts the stored run `meta` (a forked replay after its kept iterations)."""
    return execution_input(meta.run_id, meta.replay.from_iteration if meta.replay is not None else 0)


@dataclass(frozen=True)
class ParentLink:
    """What a child run takes from the run that delegated to it: the parent and its call, its depth in the
    tree, the deadline it must end by (its share of the parent's, `stepwise.steps.delegation`) and the
    parent's expiry (a child's items go with its parent's)."""

    run_id: str
    call_id: str
    depth: int
    deadline: float
    expires_at: int


class RunFields(TypedDict, total=False):
    """What a new run may set besides its owner and profile; each one left out takes its default.

    `options` are what the request set over the profile (sampling, a structured answer, client tools);
    `budget` caps tokens and cost below the profile's own caps; `ttl_days` is 30 unless given;
    `workflow_type` (STANDARD unless given) is the deployment's, which bounds the run's deadline.
    """

    run_id: str | None
    session_id: str | None
    intent: dict[str, str] | None
    intent_outcome: IntentOutcome | None
    metadata: dict[str, str] | None
    max_iterations: int | None
    options: RunOptions | None
    budget: RunBudget | None
    ttl_days: int
    workflow_type: Literal["STANDARD", "EXPRESS"]
    parent: ParentLink | None


def new_run_meta(
    runtime: StepRuntime,
    *,
    owner: str,
    profile: str,
    replay: ReplayLink | None = None,
    **fields: Unpack[RunFields],
) -> RunMeta:
    """The META of a new QUEUED run, its limits copied from the profile (nothing is stored)."""
    agent_profile = runtime.profile(profile)
    limits = RunLimits.model_validate(agent_profile.limits.model_dump(include=set(RunLimits.model_fields)))
    max_iterations = fields.get("max_iterations")
    if max_iterations is not None:
        limits = limits.model_copy(update={"max_iterations": max_iterations})
    limits = limits.within(fields.get("budget")).for_workflow(fields.get("workflow_type", "STANDARD"))
    now = datetime.fromtimestamp(runtime.clock(), UTC)
    stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    run_id = fields.get("run_id") or new_run_id()
    session_id = fields.get("session_id")
    parent = fields.get("parent")
    deadline = now.timestamp() + limits.max_execution_seconds
    expires_at = int((now + timedelta(days=fields.get("ttl_days", 30))).timestamp())
    if parent is not None:
        # a child never outlives its parent's deadline, nor its items the parent's
        deadline = min(deadline, parent.deadline)
        expires_at = parent.expires_at
    return RunMeta(
        run_id=run_id,
        owner=owner,
        profile=profile,
        session_id=session_id,
        intent=fields.get("intent") or {},
        intent_outcome=fields.get("intent_outcome"),
        metadata=fields.get("metadata") or {},
        limits=limits,
        options=fields.get("options"),
        replay=replay,
        deadline=deadline,
        created_at=stamp,
        updated_at=stamp,
        expires_at=expires_at,
        parent_run_id=parent.run_id if parent is not None else None,
        parent_call_id=parent.call_id if parent is not None else None,
        agent_depth=parent.depth if parent is not None else None,
        # the run's steps join its trace under this span (the request's child)
        trace=runtime.spans.run_started(
            run_id=run_id,
            profile=profile,
            session_id=session_id,
            endpoint=runtime.model_endpoint(agent_profile.model, profile=profile),
        ),
    )


def create_run(
    runtime: StepRuntime, *, messages: list[ChatMessage], owner: str, profile: str, **fields: Unpack[RunFields]
) -> RunMeta:
    """Store a QUEUED run with its limits copied from the profile; the caller then starts the execution.

    The profile's input guardrails check the caller's messages first; a blocked input ends the run at once
    (`stepwise.steps.guardrail_points`): the META returned is then terminal, and no execution is started.
    """
    meta = new_run_meta(runtime, owner=owner, profile=profile, **fields)
    # checked before anything is stored: a redacted value is never written, a blocked message not at all
    guarded = guard_input(runtime, profile, messages)
    messages = guarded.messages
    session_id = fields.get("session_id")
    question = next((m.content for m in reversed(messages) if m.role == "user"), "")
    # the listing shows and searches this much of it, from META alone (after the guardrails' redaction)
    meta = meta.model_copy(update={"question": question[:LISTED_QUESTION_CHARS]})
    history: list[ChatMessage] = []
    if session_id:
        turns = runtime.store.list_session_turns(session_id, owner)[-MAX_SESSION_TURNS:]
        session_tokens = runtime.config.context_limits(profile).session_tokens
        history = session_history(turns, session_tokens, runtime.profile(profile).language)
    if not runtime.store.create_run(meta, history + messages, question=question):
        raise RunAlreadyExists(f"run {meta.run_id} already exists")
    return guard_input_of_run(runtime, meta, guarded)


def session_history(turns: list[SessionTurn], budget_tokens: int, language: Language) -> list[ChatMessage]:
    """A session's earlier turns as messages, the newest that fit `budget_tokens` (oldest dropped first).

    When even the newest turn does not fit, its answer is cut to fit with a marker, so a session whose last
    answer was very long still carries its last exchange.
    """
    kept: list[list[ChatMessage]] = []
    used = 0
    if budget_tokens <= 0:
        return []
    for turn in reversed(turns):
        exchange = [ChatMessage(role="user", content=turn.question)]
        if turn.answer:
            exchange.append(ChatMessage(role="assistant", content=turn.answer))
        cost = sum(message_tokens(message) for message in exchange)
        if used + cost > budget_tokens:
            room = budget_tokens - message_tokens(exchange[0]) - MESSAGE_OVERHEAD_TOKENS
            if not kept and turn.answer and room >= _MIN_CUT_ANSWER_TOKENS:
                kept.append([exchange[0], ChatMessage(role="assistant", content=cut_to(turn.answer, room, language))])
            break
        kept.append(exchange)
        used += cost
    return [message for exchange in reversed(kept) for message in exchange]
