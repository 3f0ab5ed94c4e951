"""Child runs: an agent call starts an ordinary run of the agent's profile, and the parent waits for its end.

AwaitChildRun (a callback task of ToolInvoke's function) links the child under the parent, creates the child
run (its id derived from the parent's run and the call, so a retried or resumed wait finds the same child),
starts its execution, and sets its task token on the child's META; the child's end answers the token
(`stepwise.steps.child_ends`), so the parent waits without compute. InvokeTool then writes the call's
observation from the child's stored answer, with what the child spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepwise.errors import ChildRunSettled, ConfigError, RunAlreadyExists
from stepwise.models.delegation import ChildAllotment
from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.run import RunBudget, RunError, RunMeta, RunUsage
from stepwise.models.state import ChildWaitEvent, ToolInvokeEvent
from stepwise.steps.approvals import stored_call
from stepwise.steps.delegation import allotment_of, child_run_id, question_of
from stepwise.steps.executions import ExecutionStartFailed, state_machine_of
from stepwise.steps.run_end import refuse_ended
from stepwise.steps.run_outcomes import record_cancellation, stop_execution
from stepwise.steps.runs import ParentLink, create_run, start_input
from stepwise.steps.runtime import StepRuntime
from stepwise.store import RunAlreadyEnded
from stepwise.store.keys import observation_slot
from stepwise.telemetry.observability import logger, metrics
from stepwise.tools.observation import truncate_text

# the largest caps a request's budget may set (`RunBudget`), which a parent's share may pass
MAX_BUDGET_TOKENS = 100_000_000
MAX_BUDGET_USD = 10_000.0
# who cancels a child whose parent stopped waiting for it
WAIT_ENDED = "stepwise:parent-wait-ended"


@dataclass(frozen=True)
class Delegated:
    """What an agent call's observation says, and the child run behind it (with what it spent)."""

    content: str
    ok: bool
    error: str | None = None
    child_run_id: str | None = None
    usage: RunUsage | None = None


def await_child_run(event: ChildWaitEvent, runtime: StepRuntime) -> dict[str, Any]:
    """Start (or find) the call's child run and leave this task's token on it; the child's end answers it.

    `ChildRunSettled` when there is nothing to wait for: the observation is stored already (a replayed
    iteration), the child ended already, or no child could be started (the message says why, and becomes the
    call's observation).
    """
    stored = runtime.store.read_iteration(
        event.run_id, event.iteration, meta=True, decision=True, observation_slot=observation_slot(event.index)
    )
    assert stored.meta is not None  # read_iteration raises RunNotFound without it
    parent = stored.meta
    refuse_ended(parent)
    if stored.observation is not None:
        raise ChildRunSettled(f"call {event.call.call_id} already has its observation")
    call = stored_call(stored.decision.calls if stored.decision else None, event.call.call_id, event.index)
    allotment = allotment_of(stored.decision, event.index)
    ref = runtime.profile(parent.profile).agent_ref(call.name) if call is not None else None
    if call is None or allotment is None or ref is None:
        raise ChildRunSettled(f"call {event.call.call_id} of iteration {event.iteration} starts no child run")
    if event.task_token == event.execution:
        # an Express workflow's plain invoke (its token path is the execution's id): nothing can wait here
        return {"call_id": call.id, "waiting": False}
    question = question_of(call.arguments)
    if question is None:
        raise ChildRunSettled(f"the call to {call.name} needs a non-empty `question` string")
    child_id = child_run_id(parent.run_id, call.id)
    runtime.store.child_runs.link(
        parent, event.iteration, event.index, child_run_id=child_id, profile=ref.profile, call_id=call.id
    )
    child = runtime.store.get_run(child_id) or _create_child(parent, call, child_id, question, allotment, runtime)
    if child.status == "QUEUED":
        _start(child, event.execution, runtime)
    child = runtime.store.child_runs.await_child(child_id, event.task_token)
    if child.is_terminal:
        # it ended before the token was stored: its end found no token to answer, so the wait ends here
        raise ChildRunSettled(f"child run {child_id} already ended {child.status}")
    logger.info("waiting for a child run", extra={"run_id": parent.run_id, "child_run_id": child_id})
    return {"call_id": call.id, "child_run_id": child_id, "waiting": True}


def _create_child(
    parent: RunMeta, call: ToolCall, child_id: str, question: str, share: ChildAllotment, runtime: StepRuntime
) -> RunMeta:
    """Store the child run: the agent's profile, the parent's owner and expiry, its share of the parent's
    time and budget, and the parent's trace (its span is made under this step's, so the tree is one trace)."""
    ref = runtime.profile(parent.profile).agent_ref(call.name)
    assert ref is not None  # checked by the caller
    try:
        child = create_run(
            runtime,
            messages=[ChatMessage(role="user", content=question)],
            owner=parent.owner,
            profile=ref.profile,
            run_id=child_id,
            # an `agents:` entry caps the child's iterations below its profile's own, never above
            max_iterations=min(ref.max_iterations, runtime.profile(ref.profile).limits.max_iterations)
            if ref.max_iterations
            else None,
            budget=RunBudget(
                max_total_tokens=min(share.max_total_tokens, MAX_BUDGET_TOKENS) if share.max_total_tokens else None,
                max_cost_usd=min(share.max_cost_usd, MAX_BUDGET_USD) if share.max_cost_usd else None,
            ),
            parent=ParentLink(
                run_id=parent.run_id,
                call_id=call.id,
                depth=parent.depth + 1,
                deadline=share.deadline,
                expires_at=parent.expires_at,
            ),
        )
    except RunAlreadyExists:
        # another attempt of this wait created it a moment ago
        return runtime.store.require_run(child_id)
    metrics.add_metric(name="ChildRunsStarted", unit="Count", value=1)
    return child


def _start(child: RunMeta, parent_execution: str, runtime: StepRuntime) -> None:
    """Start the child's execution on its parent's state machine, once (Step Functions refuses a second
    execution of the same name). A child that cannot be started is recorded FAILED, and the wait ends."""
    try:
        runtime.executions.start_once(state_machine_of(parent_execution), child.run_id, start_input(child))
    except (ConfigError, ExecutionStartFailed) as exc:
        error = RunError(type=type(exc).__name__, message=str(exc))
        runtime.store.finish_run(child, "FAILED", stop_reason="error", outcome="none", error=error)
        raise ChildRunSettled(f"the child run could not be started: {exc}") from None


def delegation_outcome(event: ToolInvokeEvent, parent: RunMeta, call: ToolCall, runtime: StepRuntime) -> Delegated:
    """The observation of an agent call, from what its wait ended with and the child's stored end.

    A call that started no child says why (depth, time or budget, its arguments, an Express workflow); a
    child still open when the wait timed out is cancelled (nobody waits for it any more) and says so.
    """
    if event.call.child_timeout_seconds is None:
        return Delegated(content=_refusal(parent, call, runtime), ok=False, error="not delegated")
    outcome = event.child
    if isinstance(outcome, dict) and "Payload" in outcome:
        text = (
            f"The call to {call.name} was not run: delegating to an agent needs a Standard workflow; this run's "
            "Express workflow cannot wait for a child run. Go on without its result."
        )
        return Delegated(content=text, ok=False, error="not delegated")
    child_id = child_run_id(parent.run_id, call.id)
    child = runtime.store.get_run(child_id)
    if child is None:
        cause = outcome.get("Cause") if isinstance(outcome, dict) else None
        text = f"The call to {call.name} was not run: {cause or 'no child run was started'}. Go on without its result."
        return Delegated(content=text, ok=False, error="not delegated")
    if not child.is_terminal:
        child = _cancel_unanswered(child, runtime)
    return _observation(call, child, timed_out=child.stop_reason == "cancelled" and child.cancelled_by == WAIT_ENDED)


def _cancel_unanswered(child: RunMeta, runtime: StepRuntime) -> RunMeta:
    """Cancel a child its parent no longer waits for (the wait timed out), and stop its execution."""
    try:
        cancelled = record_cancellation(child, runtime, by=WAIT_ENDED)
    except RunAlreadyEnded as ended:
        return ended.meta
    stop_execution(child.run_id, runtime, cause="its parent stopped waiting for it")
    return cancelled


def _observation(call: ToolCall, child: RunMeta, *, timed_out: bool) -> Delegated:
    usage = child.usage
    if timed_out:
        text = f"The {call.name} agent did not answer in time; its run {child.run_id} was cancelled."
        return Delegated(content=text, ok=False, error="child run timed out", child_run_id=child.run_id, usage=usage)
    if child.status == "SUCCEEDED" and child.outcome != "partial":
        return Delegated(content=child.answer or "", ok=True, child_run_id=child.run_id, usage=usage)
    if child.status == "SUCCEEDED":
        text = (
            f"The {call.name} agent stopped before it finished ({child.stop_reason}); its best answer:\n"
            f"{child.answer or ''}"
        )
        return Delegated(content=text, ok=True, child_run_id=child.run_id, usage=usage)
    reason = f": {child.error.message}" if child.error is not None else ""
    text = f"The {call.name} agent's run {child.run_id} ended {child.status}{reason}. Go on without its result."
    return Delegated(content=text, ok=False, error=f"child run {child.status}", child_run_id=child.run_id, usage=usage)


def _refusal(parent: RunMeta, call: ToolCall, runtime: StepRuntime) -> str:
    limit = runtime.config.max_agent_depth
    if parent.depth + 1 > limit:
        return (
            f"The call to {call.name} was not run: delegating from this run would pass max_agent_depth={limit} "
            "(runs that delegate to agents that delegate...). Answer with what you have."
        )
    return (
        f"The call to {call.name} was not run: too little of this run's time or budget is left to start "
        "another agent. Answer with what you have."
    )


def capped(delegated: Delegated, max_chars: int) -> Delegated:
    """The observation cut to the profile's `max_observation_chars`, as every tool result is."""
    content, _ = truncate_text(delegated.content, max_chars)
    return Delegated(
        content=content,
        ok=delegated.ok,
        error=delegated.error,
        child_run_id=delegated.child_run_id,
        usage=delegated.usage,
    )
