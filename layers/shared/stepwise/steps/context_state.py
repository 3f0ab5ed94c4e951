"""The payload's `context` from one step to the next: what LLMCall records of a request's size, how
IterationGuard foresees the next one, and which summary the conversation is rendered with.

Kept free of the configuration and the providers: IterationGuard imports it, and its cold start loads
neither.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from stepwise.errors import InvalidStateEvent
from stepwise.models.state import ContextState, StatePayload, SummaryRef
from stepwise.models.step_record import StepRecord
from stepwise.steps.token_estimate import MESSAGE_OVERHEAD_TOKENS, tokens_of_chars

if TYPE_CHECKING:
    from stepwise.config.context import ContextLimits
    from stepwise.models.summary import ConversationSummary
    from stepwise.steps.runtime import StepRuntime


def summarized_through(context: ContextState) -> int:
    """The last iteration the conversation's summary covers (0 without one)."""
    return context.summary.through if context.summary is not None else 0


def has_unsummarized_iterations(context: ContextState, iteration: int) -> bool:
    """True when an iteration before `iteration` is complete and not yet in the summary: something a
    compaction in `iteration` could summarize."""
    return summarized_through(context) < iteration - 1


def can_compact(payload: StatePayload, limits: ContextLimits) -> bool:
    """True when LLMCall may send this iteration's call to Compact: compaction is on, Compact has not run in
    this iteration yet (it runs at most once per iteration), and there is something to summarize."""
    context = payload.context
    return (
        limits.compaction
        and context.compacted_at != payload.iteration
        and has_unsummarized_iterations(context, payload.iteration)
    )


def next_request_may_pass_threshold(payload: StatePayload) -> bool:
    """IterationGuard's test: the next request could pass the compaction threshold, counting the last
    request, its reply and, for each tool call since (or a corrective note), a tool result at its cap.

    An upper bound: Compact measures the real request and does nothing when it is under.
    """
    context = payload.context
    base = context.sent_tokens or context.sent_estimate
    if context.compact_at is None or base is None or not has_unsummarized_iterations(context, payload.iteration):
        return False
    added = max(1, len(payload.calls)) * (context.observation_tokens or 0)
    return base + (context.reply_tokens or 0) + added > context.compact_at


def context_after_call(
    context: ContextState, step: StepRecord | None, limits: ContextLimits, max_observation_chars: int
) -> ContextState:
    """The context once a model call is made (`step` records it; None leaves the context as it was)."""
    if step is None:
        return context
    # an estimated usage is not the provider's count: the next request is sized from estimates alone
    sent = None if step.usage_estimated else step.input_tokens or None
    estimate = step.estimated_tokens
    ratio = max(1.0, sent / estimate) if sent and estimate else 1.0
    observation = math.ceil(tokens_of_chars(max_observation_chars) * ratio) + MESSAGE_OVERHEAD_TOKENS
    return context.model_copy(
        update={
            "compact": False,
            "sent_tokens": sent,
            "sent_estimate": estimate,
            "reply_tokens": step.output_tokens,
            "anchored": estimate is not None,
            "compact_at": limits.compact_at if limits.compaction else None,
            "observation_tokens": observation,
        }
    )


def current_summary(payload: StatePayload, runtime: StepRuntime) -> ConversationSummary | None:
    """The summary the payload's context points at (read once per container), or None."""
    reference = payload.context.summary
    if reference is None:
        return None
    summary = runtime.store.summaries.get(payload.run_id, reference.iteration, reference.n)
    if summary is None:
        raise InvalidStateEvent(
            f"run {payload.run_id}: the summary of iteration {reference.iteration} the payload names is not stored"
        )
    return summary


def latest_summary_ref(steps: list[StepRecord]) -> tuple[SummaryRef, StepRecord] | None:
    """The latest summary a run's trace shows (from its compaction steps), with its step; None without one."""
    compactions = [(step, step.compaction) for step in steps if step.kind == "compaction" and step.compaction]
    if not compactions:
        return None
    latest, note = max(compactions, key=lambda found: (found[0].iteration, found[0].n or 0))
    return SummaryRef(iteration=latest.iteration, n=latest.n or 0, through=note.through_iteration), latest
