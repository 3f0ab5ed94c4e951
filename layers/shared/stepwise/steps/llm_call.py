"""LLMCall: render the stored conversation for the run's protocol, call the model, append its message."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from stepwise.config.context import ContextLimits
from stepwise.config.model_catalog import ModelFacts
from stepwise.errors import ContextWindowExceeded, ContextWindowExhausted
from stepwise.inputs.text_policy import replacement_note
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolSpec
from stepwise.models.state import RunContext, StatePayload, parse_event
from stepwise.models.step_record import StepRecord
from stepwise.protocols.parallel_calls import with_unwrapped_calls
from stepwise.protocols.text_tool_calls import with_written_calls
from stepwise.protocols.think_blocks import without_reasoning
from stepwise.steps.agent import RunAgent, StoredRun
from stepwise.steps.budgets import spend_after
from stepwise.steps.context_state import can_compact, context_after_call, current_summary
from stepwise.steps.context_window import (
    OVERFLOW_SAFETY,
    FittedRequest,
    RequestSize,
    fit_request,
    overflow_safety,
    rendered_history,
)
from stepwise.steps.learned_window import (
    listed_window,
    model_key,
    remember_window,
    remembered_window,
    run_limits,
    with_learned_window,
)
from stepwise.steps.model_call import call_within_deadline
from stepwise.steps.model_request import ModelTurn, model_turn, request_history
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.steering import deliver_posted
from stepwise.steps.usage_estimate import EstimatedUsage, estimated_usage_note
from stepwise.store.keys import ASSISTANT_SLOT
from stepwise.telemetry.observability import logger, metrics

if TYPE_CHECKING:
    from stepwise.llm.base import ChatModel
    from stepwise.models.summary import ConversationSummary


def _offer_note(agent: RunAgent, tools: list[ToolSpec]) -> str:
    """ ", offered 6 of 351 tools" when the profile's tools were searched rather than all offered."""
    if agent.finder is None:
        return ""
    return f", offered {len(tools)} of {len(agent.tools)} tools"


def llm_call(payload: StatePayload, runtime: StepRuntime) -> StatePayload:
    """Call the model once for this iteration; a retry after the message was stored calls nothing.

    Requests: one Query of the conversation (only the messages this container has not read yet, and only
    what the model request needs of them), a GetItem of the run's latest summary when this container has
    not read it, and one conditional put of the model's message with its trace. The request carries the
    summary in place of the iterations it covers and is made to fit the model's window
    (`stepwise.steps.context_window`); one past the profile's threshold raises `ContextWindowExceeded`,
    as the provider's own overflow does, which the state machine catches into Compact. Compact runs at most
    once per iteration: after it, an overflow is cut to fit once more and sent again, once. A model whose
    window nothing configures has it learned from its server (`stepwise.steps.learned_window`): its model
    listing before the first call, or a refusal that states it; the run carries it from then on.

    The payload comes back with the call's tokens and cost added to the run's spend and the request's size
    in its context; a retry that finds the message stored reads its step back (one GetItem), so both
    attempts return the same payload.
    """
    run = payload.run or RunContext.from_meta(runtime.store.require_run(payload.run_id))
    conversation = runtime.store.conversation(payload.run_id)
    history = conversation.messages
    if any(message.iteration == payload.iteration and message.slot == ASSISTANT_SLOT for message in history):
        logger.info("completion already stored", extra={"run_id": payload.run_id, "iteration": payload.iteration})
        # a retry returns the spend its first attempt returned: the same payload plus the stored call's usage
        stored = runtime.store.stored_message(payload.run_id, payload.iteration, ASSISTANT_SLOT)
        step = stored[1] if stored else None
        return _after_call(payload, run, step, run_limits(runtime, run), runtime)
    # messages posted to the run since the last call: this call is the one that sees them
    conversation = deliver_posted(payload.run_id, payload.iteration, run, conversation, runtime)
    history = conversation.messages
    turn = model_turn(payload, run, conversation, runtime)
    model = runtime.chat_model(turn.agent.profile.model, profile=run.profile)
    if turn.limits.window is None:
        run = _listed_window(run, turn.agent.profile.model, model, runtime)
        turn = model_turn(payload, run, conversation, runtime) if run.learned_window else turn
    agent, profile, limits = turn.agent, turn.agent.profile, turn.limits
    summary = current_summary(payload, runtime)
    rendered = rendered_history(history, summary, language=profile.language, summary_tokens=limits.summary_tokens)
    overflowed = payload.context.overflow_at == payload.iteration
    history_sent = request_history(rendered.messages, run.max_parallel_calls)

    def fit(turn: ModelTurn, size: RequestSize) -> FittedRequest:
        def build(messages: list[ChatMessage], max_tokens: int | None) -> ChatRequest:
            return turn.build(messages, max_tokens, turns_before=rendered.turns_before)

        return fit_request(
            build,
            history_sent,
            limits=turn.limits,
            size=size,
            asked_max_tokens=turn.asked_max_tokens,
            language=profile.language,
        )

    safety = OVERFLOW_SAFETY if overflowed else 1.0
    fitted = fit(turn, RequestSize(payload.context, safety=safety))
    if fitted.over_threshold and can_compact(payload, limits):
        logger.info(
            "request past the compaction threshold: to Compact first",
            extra={"run_id": payload.run_id, "iteration": payload.iteration, "estimated_tokens": fitted.tokens},
        )
        raise ContextWindowExceeded(
            f"the request (about {fitted.tokens} tokens) would pass the compaction threshold of "
            f"{limits.compact_at} tokens ({profile.model}'s window: {limits.window})"
        )
    started = time.perf_counter()
    started_at = runtime.clock()
    facts = runtime.config.model_facts(profile.model)
    request, shaping = _shaped(fitted.request, facts, thinking=turn.thinking)
    endpoint = runtime.model_endpoint(profile.model, profile=run.profile)

    def call(request: ChatRequest) -> Completion:
        return call_within_deadline(model, request, deadline=run.deadline, clock=runtime.clock, sleep=runtime.sleep)

    with runtime.spans.chat(endpoint=endpoint, request=request) as span:
        try:
            completion = call(request)
        except ContextWindowExceeded as exc:
            # the refusal may state the window: from now on the run knows it (Compact reads it there too); it
            # wins over a window a listing gave (LM Studio lists a model's largest, and may load it smaller)
            stated = exc.window
            if limits.window is None and stated is None:
                # nothing to fit it to: the run ends with its best answer (stop reason context_window)
                raise ContextWindowExhausted(f"{exc} (the model's context window is not configured)") from exc
            learnable = runtime.config.context_limits(run.profile).window is None
            if stated is not None and stated != limits.window and learnable:
                remember_window(model_key(runtime, profile.model), stated)
                run = with_learned_window(run, stated)
                turn = model_turn(payload, run, conversation, runtime)
                limits = turn.limits
            if can_compact(payload, limits):
                raise  # to Compact, then this call again
            # Compact already ran in this iteration (or has nothing to summarize): cut to fit once more, with
            # the estimates raised to what the provider counted, and send again, once
            raised = overflow_safety(exc.prompt_tokens, fitted.tokens, safety * OVERFLOW_SAFETY)
            fitted = fit(turn, RequestSize(payload.context, safety=raised))
            request, shaping = _shaped(fitted.request, facts, thinking=turn.thinking)
            try:
                completion = call(request)
            except ContextWindowExceeded as again:
                exhausted = f"{again} (after the conversation was summarized and cut to fit)"
                raise ContextWindowExhausted(exhausted) from again
        span.completed(completion)
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    # What the model thought is stored apart from what it replied, whichever way the provider sent it.
    reply = without_reasoning(completion)
    if agent.protocol.name == "function_calling":
        # calls a server without a tool-call parser left in the text are stored as the native calls they are, and
        # the calls inside OpenAI's parallel wrapper as calls of their own
        reply = with_unwrapped_calls(with_written_calls(reply, turn.tools), turn.tools)
    message = ChatMessage(
        role="assistant", content=reply.content, tool_calls=reply.tool_calls, reasoning=reply.reasoning
    )
    usage = completion.usage
    note = (
        f"protocol {agent.protocol.name}, model {completion.model or profile.model}"
        f"{_offer_note(agent, turn.tools)}{_replacement_note(completion)}{_context_note(summary, fitted.cut_messages)}"
        f"{_server_tools_note(completion)}"
        f"{estimated_usage_note(usage)}"
    )
    step = StepRecord(
        iteration=payload.iteration,
        kind="llm",
        final_round=payload.final_round,
        started_at=started_at,
        latency_ms=latency_ms,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens or None,
        cache_write_tokens=usage.cache_write_tokens or None,
        reasoning_tokens=usage.reasoning_tokens or None,
        usage_estimated=usage.unreliable is not None or None,
        finish_reason=completion.finish_reason,
        estimated_tokens=fitted.estimate,
        note="; ".join([note, *shaping]),
    )
    runtime.store.record_message(
        StoredRun(payload.run_id, run.expires_at), payload.iteration, ASSISTANT_SLOT, message, step
    )
    metrics.add_metric(name="LLMCalls", unit="Count", value=1)
    metrics.add_metric(name="ModelLatency", unit="Milliseconds", value=latency_ms)
    metrics.add_metric(name="ModelInputTokens", unit="Count", value=completion.usage.input_tokens)
    metrics.add_metric(name="ModelOutputTokens", unit="Count", value=completion.usage.output_tokens)
    if usage.cache_read_tokens:
        metrics.add_metric(name="ModelCacheReadTokens", unit="Count", value=usage.cache_read_tokens)
    if usage.cache_write_tokens:
        metrics.add_metric(name="ModelCacheWriteTokens", unit="Count", value=usage.cache_write_tokens)
    if usage.reasoning_tokens:
        metrics.add_metric(name="ModelReasoningTokens", unit="Count", value=usage.reasoning_tokens)
    if fitted.cut_messages:
        metrics.add_metric(name="MessagesCutToFit", unit="Count", value=fitted.cut_messages)
    logger.info(
        "model called",
        extra={
            "run_id": payload.run_id,
            "iteration": payload.iteration,
            "latency_ms": latency_ms,
            "tool_calls": len(completion.tool_calls),
            "estimated_tokens": fitted.tokens,
        },
    )
    return _after_call(payload, run, step, limits, runtime)


def _listed_window(run: RunContext, model_name: str, model: ChatModel, runtime: StepRuntime) -> RunContext:
    """`run` with the window its model's server lists (asked once a process per model; `learned_window`)."""
    key = model_key(runtime, model_name)
    window = remembered_window(key)
    if window is None and isinstance(model, EstimatedUsage):

        def ask() -> int | None:
            listed = model.listed_window()
            if listed is not None:
                logged = {"model": model_name, "window": listed}
                logger.info("context window listed by the model's server", extra=logged)
            return listed

        window = listed_window(key, ask)
    return with_learned_window(run, window)


def _replacement_note(completion: Completion) -> str:
    """ "; [2 characters ... replaced with U+FFFD]" when the reply held text that cannot be encoded."""
    return f"; {replacement_note(completion.replaced_characters)}" if completion.replaced_characters else ""


def _shaped(request: ChatRequest, facts: ModelFacts | None, *, thinking: bool) -> tuple[ChatRequest, list[str]]:
    """The request as the model's provider takes it (per the model catalog; `thinking` applies its rules for
    thinking), and what was dropped, for the trace. Imported here: the `stepwise.llm` package loads httpx,
    which the handler's cold start does without."""
    from stepwise.llm.request_shaping import shaped_request

    return shaped_request(request, facts, reasoning=thinking)


def _server_tools_note(completion: Completion) -> str:
    """ "; the provider ran nova_grounding itself" when the reply holds tools the provider already ran."""
    if not completion.server_tools:
        return ""
    return f"; the provider ran {', '.join(completion.server_tools)} itself"


def _context_note(summary: ConversationSummary | None, cut: int) -> str:
    """ ", iterations 1-12 summarized, 1 message cut to fit" when the request was not the whole conversation."""
    parts = [f"iterations 1-{summary.through} summarized"] if summary is not None else []
    if cut:
        parts.append(f"{cut} message{'s' if cut > 1 else ''} cut to fit")
    return "".join(f", {part}" for part in parts)


def _after_call(
    payload: StatePayload, run: RunContext, step: StepRecord | None, limits: ContextLimits, runtime: StepRuntime
) -> StatePayload:
    """The payload after this iteration's model call: the run's spend with it added, for IterationGuard's
    budgets, and the request's size with what the guard needs to foresee the next one."""
    spend = spend_after(run, step, runtime)
    max_observation_chars = runtime.profile(run.profile).limits.max_observation_chars
    context = context_after_call(payload.context, step, limits, max_observation_chars)
    return payload.model_copy(update={"run": run.model_copy(update={"spend": spend}), "context": context})


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event, run the step, return the payload with the run's spend."""
    payload = parse_event(StatePayload, event)
    with runtime.spans.step("LLMCall", run_id=payload.run_id, trace=payload.trace):
        return llm_call(payload, runtime).model_dump()
