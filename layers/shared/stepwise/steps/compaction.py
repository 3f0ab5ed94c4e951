"""Compact: summarize the earlier iterations of a run's conversation, so its next request fits the model.

Reached before LLMCall, from IterationGuard's flag (the next request could pass the profile's threshold)
or from LLMCall's Catch of `ContextWindowExceeded` (the request was too long, by the provider's word or
by its estimate), once per iteration. A refusal that states the model's window teaches the run that window
(`run.learned_window`) when nothing configured one. It writes `SUMMARY#<iteration>#<n>`, covering iterations 1 to k
(whole iterations, so a tool call and its result are never split), and its `compaction` trace step; it
never deletes or rewrites a message. LLMCall then sends the opening messages, the summary and the
messages after k.

k is the smallest that brings the request to half the threshold (a third after an overflow), so the
latest iterations stay whole where they can. A retried Compact finds its summary under the same key and
returns the same payload; one that finds nothing to summarize, or a request under the threshold (the
guard's test is an upper bound), writes nothing.
"""

from __future__ import annotations

from typing import Any, Literal

# The model catalog, which `StepwiseConfig` loads with the first model looked up: every first call of Compact
# looks its model up (the context window, the prices), so it loads in the init, not inside that call.
import stepwise.config.model_catalog  # noqa: F401
from stepwise.models.messages import ChatRequest, Completion
from stepwise.models.overflow import stated_limits
from stepwise.models.run import StoredMessage
from stepwise.models.state import CompactEvent, RunContext, StatePayload, SummaryRef, parse_event
from stepwise.models.step_record import CompactionNote
from stepwise.models.summary import ConversationSummary
from stepwise.steps.agent import StoredRun
from stepwise.steps.budgets import spend_after
from stepwise.steps.context_state import current_summary, summarized_through
from stepwise.steps.context_window import OVERFLOW_SAFETY, RequestSize, rendered_history
from stepwise.steps.learned_window import with_learned_window
from stepwise.steps.model_request import ModelTurn, model_turn, request_history
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.summarizer import SummaryInput, call_digests, merged_calls, write_notes
from stepwise.steps.summary_text import attributed_facts
from stepwise.steps.token_estimate import MESSAGE_OVERHEAD_TOKENS, message_tokens, request_tokens
from stepwise.store.summaries import compaction_step
from stepwise.telemetry.observability import logger, metrics

Reason = Literal["window", "overflow"]
# What a compaction aims for, as a share of the threshold: room for the next iterations before another.
_TARGET_SHARE: dict[Reason, float] = {"window": 0.5, "overflow": 0.35}


def compact(event: CompactEvent, runtime: StepRuntime) -> StatePayload:
    """Summarize what the next request cannot carry, unless this iteration's summary is stored already.

    Requests: a GetItem for the summary (a retry finds it), the conversation Query (only what this
    container has not read), the trace since the last summary (the calls' outcomes), then the summary's
    conditional put and its step's. The payload comes back pointing at the summary, with the summarizer's
    tokens added to the run's spend.
    """
    payload = StatePayload.model_validate(event.model_dump(exclude={"overflow"}))
    reason: Reason = "overflow" if event.overflow is not None else "window"
    run = payload.run or RunContext.from_meta(runtime.store.require_run(payload.run_id))
    if event.overflow is not None and event.overflow.Cause:
        # the refusal that sent the run here may state the window its model's server has
        run = with_learned_window(run, _stated_window(event.overflow.Cause, payload))
    context = payload.context
    summary_ref = context.summary
    n = summary_ref.n + 1 if summary_ref is not None and summary_ref.iteration == payload.iteration else 0
    # once per iteration, whatever it finds: after it, LLMCall cuts what still does not fit
    updates: dict[str, Any] = {"compact": False, "compacted_at": payload.iteration}
    if reason == "overflow":
        updates["overflow_at"] = payload.iteration
    stored = runtime.store.summaries.get(payload.run_id, payload.iteration, n)
    if stored is None:
        written = _summarize(payload, run, reason, n, runtime)
        if written is None:
            logger.info("nothing to compact", extra={"run_id": payload.run_id, "iteration": payload.iteration})
            return payload.model_copy(update={"context": context.model_copy(update=updates), "run": run})
        _count(written)
        stored = written
    # put again on a retry too: the step is derived from the stored summary, and its put may be what was lost
    stored = runtime.store.summaries.record(StoredRun(payload.run_id, run.expires_at), stored)
    updates["anchored"] = False
    summarized = context.model_copy(update=updates).with_summary(
        SummaryRef(iteration=stored.iteration, n=stored.n, through=stored.through)
    )
    spend = spend_after(run, compaction_step(stored), runtime)
    return payload.model_copy(update={"context": summarized, "run": run.model_copy(update={"spend": spend})})


def _stated_window(cause: str, payload: StatePayload) -> int | None:
    """The window the refusal behind a caught error stated, if it stated one readably (the number only helps:
    one that does not validate is logged, and the run compacts without it)."""
    try:
        return stated_limits(cause).window
    except ValueError as exc:
        logger.warning(str(exc), extra={"run_id": payload.run_id, "iteration": payload.iteration})
        return None


def _summarize(
    payload: StatePayload, run: RunContext, reason: Reason, n: int, runtime: StepRuntime
) -> ConversationSummary | None:
    """The summary this compaction writes, or None when there is nothing it should summarize."""
    conversation = runtime.store.conversation(payload.run_id)
    turn = model_turn(payload, run, conversation, runtime)
    limits = turn.limits
    if not limits.compaction or limits.compact_at is None:
        return None
    history = conversation.messages
    previous = current_summary(payload, runtime)
    first, last = summarized_through(payload.context) + 1, payload.iteration - 1
    if first > last:
        return None
    safety = OVERFLOW_SAFETY if reason == "overflow" else 1.0
    language = turn.agent.profile.language
    tokens_before = _request_size(turn, history, previous, run, RequestSize(payload.context, safety=safety))
    if reason == "window" and tokens_before <= limits.compact_at:
        return None
    fresh = RequestSize(payload.context.model_copy(update={"anchored": False}), safety=safety)
    through = _boundary(turn, history, first, last, fresh, int(limits.compact_at * _TARGET_SHARE[reason]), run)
    covered = [message for message in history if first <= message.iteration <= through]
    outcomes = {
        (step.iteration, step.call_id or ""): step.ok
        for step in runtime.store.list_steps(payload.run_id, since_iteration=first)
        if step.kind == "tool" and step.iteration <= through
    }
    question = next((m.content for m in reversed(history) if m.iteration == 0 and m.role == "user"), "")
    endpoint = runtime.model_endpoint(limits.summary_model, profile=run.profile)
    model = runtime.chat_model(limits.summary_model, profile=run.profile)

    def summarize(request: ChatRequest) -> Completion:
        with runtime.spans.chat(endpoint=endpoint, request=request) as span:
            completion = model.complete(request)
            span.completed(completion)
        return completion

    notes = write_notes(
        SummaryInput(question=question, previous=previous, messages=covered, first=first, through=through),
        complete=summarize,
        model_name=endpoint.model,
        limits=limits,
        language=language,
        outcomes=outcomes,
    )
    calls, earlier = merged_calls(previous, call_digests(covered, outcomes))
    placeholder = CompactionNote(
        first_iteration=first,
        through_iteration=through,
        tokens_before=tokens_before,
        tokens_after=0,
        source="model",
        reason=reason,
    )
    summary = ConversationSummary(
        iteration=payload.iteration,
        n=n,
        through=through,
        calls=calls,
        earlier_calls=earlier,
        facts=attributed_facts(notes.facts, covered),
        open=notes.open,
        note=placeholder,
        input_tokens=notes.input_tokens,
        output_tokens=notes.output_tokens,
        latency_ms=round(notes.latency_ms, 1),
        usage_estimated=notes.usage_estimated,
    )
    tokens_after = _request_size(turn, history, summary, run, fresh)
    note = placeholder.model_copy(
        update={
            "tokens_after": tokens_after,
            "model": notes.model if notes.model_calls else None,
            "source": notes.source,
            "model_calls": notes.model_calls,
            "chunks": notes.chunks,
        }
    )
    logger.info(
        "conversation compacted",
        extra={
            "run_id": payload.run_id,
            "iteration": payload.iteration,
            "through": through,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "source": notes.source,
            "problems": notes.problems,
        },
    )
    return summary.model_copy(update={"note": note})


def _request_size(
    turn: ModelTurn,
    history: list[StoredMessage],
    summary: ConversationSummary | None,
    run: RunContext,
    size: RequestSize,
) -> int:
    """The next request's tokens with `summary` in place of what it covers."""
    limits = turn.limits
    rendered = rendered_history(
        history, summary, language=turn.agent.profile.language, summary_tokens=limits.summary_tokens
    )
    request = turn.build(request_history(rendered.messages, run.max_parallel_calls), None)
    return size.tokens(request_tokens(request))


def _boundary(
    turn: ModelTurn,
    history: list[StoredMessage],
    first: int,
    last: int,
    size: RequestSize,
    target: int,
    run: RunContext,
) -> int:
    """The smallest k in [first, last] whose request (opening messages, a summary at its budget, the
    messages after k) is within `target`; `last` when none is."""
    opening = [message for message in history if message.iteration == 0]
    base = request_tokens(turn.build(request_history(opening, run.max_parallel_calls), None))
    base += turn.limits.summary_tokens + MESSAGE_OVERHEAD_TOKENS
    by_iteration: dict[int, int] = {}
    for message in history:
        if message.iteration > 0:
            by_iteration[message.iteration] = by_iteration.get(message.iteration, 0) + message_tokens(message)
    for k in range(first, last + 1):
        tail = sum(tokens for iteration, tokens in by_iteration.items() if iteration > k)
        if size.tokens(base + tail) <= target:
            return k
    return last


def _count(summary: ConversationSummary) -> None:
    metrics.add_metric(name="Compactions", unit="Count", value=1)
    metrics.add_metric(name="CompactionInputTokens", unit="Count", value=summary.input_tokens)
    metrics.add_metric(name="CompactionOutputTokens", unit="Count", value=summary.output_tokens)
    if summary.note.source == "digest":
        metrics.add_metric(name="SummaryDigests", unit="Count", value=1)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event (the payload, and the caught error when LLMCall sent it), run
    the step, return the payload pointing at the summary."""
    compact_event = parse_event(CompactEvent, event)
    with runtime.spans.step("Compact", run_id=compact_event.run_id, trace=compact_event.trace):
        return compact(compact_event, runtime).model_dump()
