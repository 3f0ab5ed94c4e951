"""ToolInvoke: make one tool call of an iteration (one Map item) and append its observation.

A call of a tool that requires approval runs only once approved; otherwise its observation says it was
denied (see `stepwise.steps.approvals`, whose wait-for-approval task is a mode of this function). A call
the tool policy refused (`stepwise.steps.call_gate`, decided with the calls) is never sent.
"""

from __future__ import annotations

from typing import Any

from stepwise.errors import InvalidStateEvent
from stepwise.models.approval import ApprovalNote
from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.policy import PolicyVerdict
from stepwise.models.run import RunMeta, RunUsage
from stepwise.models.state import ApprovalWaitEvent, ChildWaitEvent, ToolInvokeEvent, ToolInvokeResult, parse_event
from stepwise.models.step_record import StepRecord
from stepwise.steps.approvals import Verdict, await_approval, settle_approval, stored_call
from stepwise.steps.call_gate import POLICY_REFUSAL_ERROR, approval_refusal_error, refusal_observation, verdict_of
from stepwise.steps.guardrail_points import guard_observation
from stepwise.steps.replay_tools import CALLED_LIVE, ReplayAnswer, replay_answer
from stepwise.steps.run_end import refuse_ended
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_attempts import SentCall, send_at_most_once
from stepwise.steps.tool_offer import finder_for
from stepwise.steps.whole_output import KeptOutput, keep_whole_output
from stepwise.store import RunRef
from stepwise.store.keys import observation_slot
from stepwise.telemetry.observability import logger, metrics
from stepwise.tools import ToolInvoker
from stepwise.tools.observation import guarded_window, preview_text, recut, utf8_bytes


def tool_invoke(event: ToolInvokeEvent, runtime: StepRuntime) -> ToolInvokeResult:
    """Call the tool unless its observation is already stored (a retried step never calls it twice).

    Requests: one BatchGetItem of META (the run's profile, and whether it was cancelled), the decision
    (which holds the call's arguments) and the observation (stored if this is a retry), then the
    conditional put of the observation with its trace. A call that may change something outside has its
    start put before it is sent (`stepwise.steps.tool_attempts`): one more request; so has a result longer
    than what the model receives, kept whole apart (`stepwise.steps.whole_output`).
    """
    stored = runtime.store.read_iteration(
        event.run_id, event.iteration, meta=True, decision=True, observation_slot=observation_slot(event.index)
    )
    assert stored.meta is not None  # read_iteration raises RunNotFound without it
    refuse_ended(stored.meta)
    if stored.observation is not None:
        return ToolInvokeResult(call_id=event.call.call_id, ok=None, replayed=True)
    call = stored_call(stored.decision.calls if stored.decision else None, event.call.call_id, event.index)
    if call is None:
        raise InvalidStateEvent(
            f"call {event.call.call_id} is not call {event.index} of iteration {event.iteration} of run {event.run_id}"
        )
    agent_profile = runtime.profile(stored.meta.profile)
    # a replay answers an agent call from its recording, as any tool's (it never starts a child run)
    if stored.meta.replay is None and agent_profile.agent_ref(call.name) is not None:
        return _record_delegation(event, stored.meta, call, runtime, agent_profile.limits.max_observation_chars)
    policy = verdict_of(stored.decision, event.index)
    if policy is not None and policy.refuses:
        return _record_policy_refusal(event, stored.meta, call, policy, runtime)
    if policy is not None and policy.effect == "forbid":
        # log_only: the call runs; what the policy would have done is its `policy` step and this metric
        metrics.add_metric(name="ToolCallsWouldBeRefusedByPolicy", unit="Count", value=1)
    approval = None
    if event.call.approval_timeout_seconds is not None:
        verdict = settle_approval(event.run_id, event.iteration, event.index, event.approval, runtime)
        if not verdict.approved:
            return _record_refusal(event, stored.meta, call, verdict, runtime)
        approval = verdict.note
    note = None
    if stored.meta.replay is not None:
        held = policy is not None and policy.waits
        replayed = replay_answer(stored.meta, event.iteration, event.index, call, runtime, held=held)
        if replayed is not None:
            return _record_replayed(event, stored.meta, call, replayed, runtime)
        note = CALLED_LIVE
    profile = runtime.profile(stored.meta.profile)
    registry = runtime.tools()
    allowed = set(profile.tools) if profile.tools is not None else set(registry.names())
    callable_tools = registry.restricted_to(allowed)
    # A profile with more tools than it offers at once also has find_tools (stepwise.steps.tool_offer).
    finder = finder_for(stored.meta.profile, stored.meta.options, runtime)
    invoker = ToolInvoker(
        callable_tools.with_tools([finder]) if finder is not None else callable_tools,
        max_observation_chars=profile.limits.max_observation_chars,
        redactor=runtime.secret_resolver.redactor,
        strict_nulls=runtime.config.models[profile.model].capabilities.strict_tools,
    )
    known = registry.get(call.name)
    description = known.spec.description if known is not None else None
    started_at = runtime.clock()
    with runtime.spans.tool(name=call.name, call_id=call.id, description=description) as span:
        sent = send_at_most_once(
            stored.meta,
            event.iteration,
            event.index,
            call,
            effects=registry.effects(call.name),
            attempts=runtime.store.tool_attempts,
            send=invoker.invoke,
        )
        observation = sent.observation
        span.observed(observation)
    # the profile's tool-result guardrails, before the observation is stored or sent anywhere; past the cut of
    # a cut result by a little, so a value the cut splits is still recognised, then cut again as it was
    checked, beyond = observation.content, 0
    if observation.whole_content is not None:
        checked, beyond = guarded_window(observation.whole_content, observation.content)
    content, error = guard_observation(runtime, stored.meta, event.iteration, event.index, checked, observation.error)
    notice = profile.guardrails.tool_notice if profile.guardrails is not None else None
    if observation.whole_content is not None and content != notice:
        content = recut(content, observation.content, profile.limits.max_observation_chars, beyond)
    # before the message, its commit record: once that is stored, so is the whole result
    kept = keep_whole_output(
        runtime, stored.meta, event.iteration, event.index, observation.whole_content, model_copy=content
    )
    _store_observation(
        event,
        stored.meta,
        call,
        runtime,
        content=content,
        ok=observation.ok,
        error=error,
        latency_ms=observation.latency_ms,
        sent=sent,
        note=note,
        approval=approval,
        started_at=started_at,
        output_chars=observation.output_chars,
        kept=kept,
    )
    # Each ToolInvoke handles one call: its metrics are also published per tool.
    metrics.add_dimensions(tool=call.name)
    metrics.add_metric(name="ToolCalls", unit="Count", value=1)
    metrics.add_metric(name="ToolLatency", unit="Milliseconds", value=observation.latency_ms)
    # 0 or 1 per call, so the metric's average is the failure rate
    metrics.add_metric(name="ToolFailures", unit="Count", value=0 if observation.ok else 1)
    logger.info(
        "tool called",
        extra={
            "run_id": event.run_id,
            "iteration": event.iteration,
            "tool": call.name,
            "ok": observation.ok,
            "latency_ms": observation.latency_ms,
        },
    )
    return ToolInvokeResult(call_id=call.id, ok=observation.ok)


def _record_refusal(
    event: ToolInvokeEvent, run: RunRef, call: ToolCall, verdict: Verdict, runtime: StepRuntime
) -> ToolInvokeResult:
    """Store the observation of a call that was not approved; the tool is not called."""
    content = verdict.observation(call, event.call.approval_timeout_seconds)
    error = approval_refusal_error(verdict.status)
    _store_observation(event, run, call, runtime, content=content, ok=False, error=error, approval=verdict.note)
    logger.info("tool call not approved", extra={"run_id": event.run_id, "tool": call.name, "status": verdict.status})
    return ToolInvokeResult(call_id=call.id, ok=False)


def _record_delegation(
    event: ToolInvokeEvent, run: RunMeta, call: ToolCall, runtime: StepRuntime, max_chars: int
) -> ToolInvokeResult:
    """Store the observation of an agent call: the child run's answer (or why there is none), with what the
    child spent; it passes the tool-result guardrails as any tool's result does."""
    # Child runs (starting, waiting for and stopping executions) load with the first agent call: a
    # container whose first call is a plain tool's does not import them.
    from stepwise.steps.child_runs import capped, delegation_outcome

    delegated = capped(delegation_outcome(event, run, call, runtime), max_chars)
    content, error = guard_observation(runtime, run, event.iteration, event.index, delegated.content, delegated.error)
    _store_observation(
        event,
        run,
        call,
        runtime,
        content=content,
        ok=delegated.ok,
        error=error,
        child_run_id=delegated.child_run_id,
        child_usage=delegated.usage,
    )
    metrics.add_metric(name="ChildRunCalls", unit="Count", value=1)
    logger.info(
        "agent called",
        extra={"run_id": event.run_id, "tool": call.name, "child_run_id": delegated.child_run_id, "ok": delegated.ok},
    )
    return ToolInvokeResult(call_id=call.id, ok=delegated.ok)


def _record_policy_refusal(
    event: ToolInvokeEvent, run: RunRef, call: ToolCall, verdict: PolicyVerdict, runtime: StepRuntime
) -> ToolInvokeResult:
    """Store the observation of a call the tool policy refused; the tool is not called, nor asked about."""
    content = refusal_observation(call, verdict)
    _store_observation(event, run, call, runtime, content=content, ok=False, error=POLICY_REFUSAL_ERROR)
    metrics.add_metric(name="ToolCallsRefusedByPolicy", unit="Count", value=1)
    logger.info(
        "tool call refused by policy",
        extra={"run_id": event.run_id, "tool": call.name, "policies": verdict.policies, "reason": verdict.reason},
    )
    return ToolInvokeResult(call_id=call.id, ok=False)


def _record_replayed(
    event: ToolInvokeEvent, run: RunRef, call: ToolCall, answer: ReplayAnswer, runtime: StepRuntime
) -> ToolInvokeResult:
    """Store the observation a replay answered from the recording (or "not recorded"); no tool is called."""
    _store_observation(
        event, run, call, runtime, content=answer.content, ok=answer.ok, error=answer.error, note=answer.note
    )
    logger.info("tool call replayed", extra={"run_id": event.run_id, "tool": call.name, "ok": answer.ok})
    return ToolInvokeResult(call_id=call.id, ok=answer.ok)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the Map item and run the step; an item carrying a task token is a callback
    task of a call, which stores the token and returns: the wait for a child run (it names its execution) or
    the wait for approval."""
    if isinstance(event, dict) and "task_token" in event and "execution" in event:
        from stepwise.steps.child_runs import await_child_run  # as in `_record_delegation`

        child_wait = parse_event(ChildWaitEvent, event)
        with runtime.spans.step("AwaitChildRun", run_id=child_wait.run_id, trace=child_wait.trace):
            return await_child_run(child_wait, runtime)
    if isinstance(event, dict) and "task_token" in event:
        wait = parse_event(ApprovalWaitEvent, event)
        with runtime.spans.step("AwaitApproval", run_id=wait.run_id, trace=wait.trace):
            return await_approval(wait, runtime)
    item = parse_event(ToolInvokeEvent, event)
    with runtime.spans.step("ToolInvoke", run_id=item.run_id, trace=item.trace):
        return tool_invoke(item, runtime).model_dump()


def _store_observation(
    event: ToolInvokeEvent,
    run: RunRef,
    call: ToolCall,
    runtime: StepRuntime,
    *,
    content: str,
    ok: bool,
    error: str | None,
    latency_ms: float | None = None,
    sent: SentCall | None = None,
    note: str | None = None,
    approval: ApprovalNote | None = None,
    child_run_id: str | None = None,
    child_usage: RunUsage | None = None,
    started_at: float | None = None,
    output_chars: int | None = None,
    kept: KeptOutput | None = None,
) -> None:
    """Commit the call's observation message, with its trace step (and how its approval was answered), in
    the call's slot. The step keeps a preview of the observation and its size; the message holds it whole, and
    the step counts the parts of the tool's whole result when it was `kept` apart."""
    message = ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name)
    step = StepRecord(
        iteration=event.iteration,
        kind="tool",
        n=event.index,
        action=call.name,
        call_id=call.id,
        arguments=call.arguments,
        observation=preview_text(content),
        observation_chars=len(content),
        observation_bytes=utf8_bytes(content),
        output_chars=output_chars,
        stored_output_chars=kept.chars if kept is not None else None,
        stored_output_parts=kept.parts if kept is not None else None,
        stored_output_cut=True if kept is not None and kept.cut else None,
        started_at=runtime.clock() if started_at is None else started_at,
        ok=ok,
        latency_ms=latency_ms,
        error=error,
        idempotency_key=sent.idempotency_key if sent is not None and sent.attempt is not None else None,
        attempt=sent.attempt if sent is not None else None,
        note=note,
        approval=approval,
        child_run_id=child_run_id,
        child_usage=child_usage,
    )
    runtime.store.record_message(run, event.iteration, observation_slot(event.index), message, step)
