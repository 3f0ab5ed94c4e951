"""LLMCall: render the stored conversation for the run's protocol, call the model, append its message."""

from __future__ import annotations

import time
from typing import Any, TypeVar

from stepwise.config.model import AgentProfile
from stepwise.config.reasoning import ReasoningSetting, resolve_reasoning
from stepwise.inputs.text_policy import replacement_note
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolSpec
from stepwise.models.run import RunOptions, StepRecord, StoredMessage
from stepwise.models.state import RunContext, StatePayload, parse_event
from stepwise.protocols.text_tool_calls import with_written_calls
from stepwise.protocols.think_blocks import without_reasoning
from stepwise.steps.agent import AgentRun, RunAgent, StoredRun, agent_for
from stepwise.steps.budgets import spend_after
from stepwise.steps.model_call import call_within_deadline
from stepwise.steps.runtime import StepRuntime
from stepwise.store.keys import ASSISTANT_SLOT
from stepwise.telemetry.observability import logger, metrics

_T = TypeVar("_T")


def request_history(history: list[StoredMessage], max_parallel_calls: int) -> list[ChatMessage]:
    """The stored conversation as the protocol gets it, with a result for every tool call.

    Calls beyond `max_parallel_calls` were dropped by Parse and never run; providers refuse a tool
    call without a result, so each gets one saying it was not run.
    """
    # Per iteration: servers that omit call ids get positional ones, repeated from one reply to the next.
    answered = {(message.iteration, message.tool_call_id) for message in history if message.role == "tool"}
    rendered: list[ChatMessage] = []
    unanswered: list[ChatMessage] = []
    for message in history:
        if message.role != "tool":
            rendered.extend(unanswered)
            unanswered = []
        rendered.append(ChatMessage.model_validate(message.model_dump(exclude={"iteration", "slot"})))
        if message.role == "assistant":
            unanswered = [
                ChatMessage(
                    role="tool",
                    content=f"Not run: at most {max_parallel_calls} tool calls are run per reply. "
                    "Call it again if you still need it.",
                    tool_call_id=call.id,
                    name=call.name,
                )
                for call in message.tool_calls
                if (message.iteration, call.id) not in answered
            ]
    rendered.extend(unanswered)
    return rendered


def effective_tool_choice(tool_choice: str | None, history: list[StoredMessage]) -> str | None:
    """The tool_choice of this call: a forcing one (`required` or a tool name) holds until the run's
    first tool call, then `auto`, so a forced model can still give its answer instead of looping to the
    iteration limit.
    """
    forcing = tool_choice is not None and tool_choice not in ("auto", "none")
    if forcing and any(message.iteration > 0 and message.tool_calls for message in history):
        return "auto"
    return tool_choice


def _first_set(*values: _T | None) -> _T | None:
    return next((value for value in values if value is not None), None)


def _offer_note(agent: RunAgent, tools: list[ToolSpec]) -> str:
    """ ", offered 6 of 351 tools" when the profile's tools were searched rather than all offered."""
    if agent.finder is None:
        return ""
    return f", offered {len(tools)} of {len(agent.tools)} tools"


def reasoning_setting(profile: AgentProfile, options: RunOptions) -> ReasoningSetting | None:
    """The profile's thinking, with the effort a request asked for (`reasoning_effort`) over the profile's."""
    asked = options.sampling.reasoning_effort
    if profile.reasoning is None or asked is None:
        return profile.reasoning
    effort = "low" if asked == "minimal" else asked
    return profile.reasoning.model_copy(update={"effort": effort, "enabled": True})


def with_reasoning(
    request: ChatRequest, profile: AgentProfile, options: RunOptions, runtime: StepRuntime
) -> ChatRequest:
    """The request with the profile's thinking as the model's catalog entry says to ask for it, room for it
    in `max_tokens`, and how the model wants its reasoning back (`stepwise.llm.reasoning`)."""
    setting = reasoning_setting(profile, options)
    facts = runtime.config.model_facts(profile.model)
    reasoning, max_tokens, pass_back = resolve_reasoning(setting, facts, request.max_tokens)
    sampling = request.sampling
    if reasoning is not None:
        # Folded into the reasoning request, which sends it in the model's own field.
        sampling = sampling.model_copy(update={"reasoning_effort": None})
    return request.model_copy(
        update={
            "reasoning": reasoning,
            "reasoning_pass_back": pass_back,
            "max_tokens": max_tokens,
            "sampling": sampling,
        }
    )


def _replacement_note(completion: Completion) -> str:
    """ "; [2 characters ... replaced with U+FFFD]" when the reply held text that cannot be encoded."""
    return f"; {replacement_note(completion.replaced_characters)}" if completion.replaced_characters else ""


def _with_spend(payload: StatePayload, run: RunContext, step: StepRecord | None, runtime: StepRuntime) -> StatePayload:
    """The payload with the run's spend after this iteration's model call, for IterationGuard's budgets."""
    return payload.model_copy(update={"run": run.model_copy(update={"spend": spend_after(run, step, runtime)})})


def llm_call(payload: StatePayload, runtime: StepRuntime) -> StatePayload:
    """Call the model once for this iteration; a retry after the message was stored calls nothing.

    Requests: one Query of the conversation (only the messages this container has not read yet, and only
    what the model request needs of them) and one conditional put of the model's message with its trace.
    The payload comes back with the call's tokens and cost added to the run's spend; a retry that finds
    the message stored reads its usage back (one GetItem), so both attempts return the same payload.
    """
    run = payload.run or RunContext.from_meta(runtime.store.require_run(payload.run_id))
    conversation = runtime.store.conversation(payload.run_id)
    history = conversation.messages
    if any(message.iteration == payload.iteration and message.slot == ASSISTANT_SLOT for message in history):
        logger.info("completion already stored", extra={"run_id": payload.run_id, "iteration": payload.iteration})
        # a retry returns the spend its first attempt returned: the same payload plus the stored call's usage
        stored = runtime.store.stored_message(payload.run_id, payload.iteration, ASSISTANT_SLOT)
        return _with_spend(payload, run, stored[1] if stored else None, runtime)
    stored_options = RunOptions.model_validate_json(conversation.options) if conversation.options else None
    agent = agent_for(AgentRun(run.profile, stored_options), runtime)
    profile = agent.profile
    options = stored_options or RunOptions()
    tool_choice = effective_tool_choice(options.tool_choice or profile.tool_choice, history)
    # Past the profile's tool-search threshold: find_tools and the tools the run found, not all of them.
    tools = agent.offered_tools(history, tool_choice)
    request = agent.protocol.build_request(
        system_prompt=profile.system_prompt,
        history=request_history(history, run.max_parallel_calls),
        tools=tools,
        final_round=payload.final_round,
        tool_choice=tool_choice,
        parallel_tool_calls=_first_set(options.parallel_tool_calls, profile.parallel_tool_calls),
        max_tokens=_first_set(options.max_tokens, profile.max_tokens),
        temperature=_first_set(options.temperature, profile.temperature),
        language=profile.language,
    )
    # The protocol's own stop sequences (ReAct's "Observation:") stay; the client's are added.
    stop = list(dict.fromkeys(request.stop + options.stop))
    request = request.model_copy(update={"sampling": options.sampling, "stop": stop})
    request = with_reasoning(request, profile, options, runtime)
    thinking = request.reasoning is not None and request.reasoning.enabled
    # What the model's provider refuses (per the model catalog) is dropped here, and said in the trace.
    # Imported here: the `stepwise.llm` package loads httpx, which the handler's cold start does without.
    from stepwise.llm.request_shaping import shaped_request

    request, shaping = shaped_request(request, runtime.config.model_facts(profile.model), reasoning=thinking)
    started = time.perf_counter()
    provider, model_name = runtime.model_identity(profile.model)
    with runtime.spans.chat(
        provider=provider, model=model_name, max_tokens=request.max_tokens, temperature=request.temperature
    ) as span:
        completion = call_within_deadline(
            runtime.chat_model(profile.model), request, deadline=run.deadline, clock=runtime.clock, sleep=runtime.sleep
        )
        span.completed(completion)
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    # What the model thought is stored apart from what it replied, whichever way the provider sent it.
    reply = without_reasoning(completion)
    if agent.protocol.name == "function_calling":
        # calls a server without a tool-call parser left in the text are stored as the native calls they are
        reply = with_written_calls(reply)
    message = ChatMessage(
        role="assistant", content=reply.content, tool_calls=reply.tool_calls, reasoning=reply.reasoning
    )
    notes = [
        f"protocol {agent.protocol.name}, model {completion.model or profile.model}{_offer_note(agent, tools)}"
        f"{_replacement_note(completion)}"
    ]
    usage = completion.usage
    step = StepRecord(
        iteration=payload.iteration,
        kind="llm",
        final_round=payload.final_round,
        latency_ms=latency_ms,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens or None,
        cache_write_tokens=usage.cache_write_tokens or None,
        reasoning_tokens=usage.reasoning_tokens or None,
        finish_reason=completion.finish_reason,
        note="; ".join(notes + shaping),
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
    logger.info(
        "model called",
        extra={
            "run_id": payload.run_id,
            "iteration": payload.iteration,
            "latency_ms": latency_ms,
            "tool_calls": len(completion.tool_calls),
        },
    )
    return _with_spend(payload, run, step, runtime)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event, run the step, return the payload with the run's spend."""
    payload = parse_event(StatePayload, event)
    with runtime.spans.step("LLMCall", run_id=payload.run_id, trace=payload.trace):
        return llm_call(payload, runtime).model_dump()
