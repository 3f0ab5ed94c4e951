"""Approval before a tool runs: the wait-for-approval task, and how ToolInvoke reads the answer.

The wait is a callback task (`lambda:invoke.waitForTaskToken`) of ToolInvoke's function: it stores the
call with its task token and marks the run `WAITING_APPROVAL`, then returns; the execution waits until
the API answers the token (or the wait times out). ToolInvoke then settles the call: approved, it runs;
denied or timed out, it is not called and its observation says why, with the approver's reason, so the
model can go on without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepwise.errors import ApprovalDenied, ApprovalSettled
from stepwise.models.approval import Approval, ApprovalNote, ApprovalStatus
from stepwise.models.messages import ToolCall
from stepwise.models.policy import PolicyVerdict
from stepwise.models.run import RunMeta
from stepwise.models.state import ApprovalWaitEvent
from stepwise.steps.run_end import refuse_ended
from stepwise.steps.runtime import StepRuntime
from stepwise.store.approvals import ApprovalNotPending as StoredApprovalChanged
from stepwise.store.keys import observation_slot
from stepwise.telemetry.observability import logger, metrics

_TIMEOUT_ERRORS = ("States.Timeout", "States.HeartbeatTimeout")


@dataclass(frozen=True)
class Verdict:
    """Whether a call may run, and the observation the model gets when it may not."""

    approved: bool
    status: ApprovalStatus
    reason: str | None = None
    # False when no person refused the call: its wait failed, or the workflow cannot wait for an answer
    by_approver: bool = True
    # what the call's trace step records of the answer
    note: ApprovalNote | None = None

    def observation(self, call: ToolCall, timeout_seconds: int | None) -> str:
        """What the model reads instead of the tool's result."""
        if self.status == "timed_out":
            waited = f" within {timeout_seconds} seconds" if timeout_seconds else ""
            return f"The call to {call.name} was not run: nobody approved it{waited}. Go on without its result."
        if not self.by_approver:
            return (
                f"The call to {call.name} was not run: it needs approval, and none could be obtained: {self.reason}. "
                "Go on without its result."
            )
        because = f" Reason given: {self.reason}" if self.reason else " No reason was given."
        return f"The call to {call.name} was not run: the approver denied it.{because} Go on without its result."


def approval_timeout(
    meta: RunMeta, tool: str, runtime: StepRuntime, verdict: PolicyVerdict | None = None
) -> int | None:
    """How long a call of `tool` in this run waits for approval, or None when the tool needs none.

    A call waits when its tool requires approval or the tool policy's `verdict` sends it for approval
    (then for the tool's configured wait, or the default one); a call the policy refused never waits.
    The configured wait is cut to what is left before the run's deadline, so a wait never outlives
    its run (at least a second, for a run already at its deadline). A replay asks for none: its calls are
    answered from the recording, and a tool that needs approval is never called live in one
    (`stepwise.steps.replay_tools`).
    """
    if meta.replay is not None or (verdict is not None and verdict.refuses):
        return None
    profile = runtime.profile(meta.profile)
    if profile.tools is not None and tool not in profile.tools:
        return None
    configured = runtime.tools().approval_timeout(tool)
    if configured is None and verdict is not None and verdict.waits:
        # the tool sources' configuration models: not loaded by a handler that never meets a policy
        from stepwise.config.tool_call_rules import DEFAULT_APPROVAL_TIMEOUT_SECONDS

        configured = DEFAULT_APPROVAL_TIMEOUT_SECONDS
    if configured is None:
        return None
    return max(1, min(configured, int(meta.deadline - runtime.clock())))


def stored_call(calls: list[dict[str, Any]] | None, call_id: str, index: int) -> ToolCall | None:
    """The `index`-th call of a stored decision, if it is the call `call_id`."""
    calls = calls or []
    found = calls[index] if index < len(calls) else None
    return ToolCall.model_validate(found) if found is not None and found["id"] == call_id else None


def await_approval(event: ApprovalWaitEvent, runtime: StepRuntime) -> dict[str, Any]:
    """Store the call as waiting for approval with its task token, and mark the run WAITING_APPROVAL.

    `ApprovalSettled` when the wait should not begin: the call was answered (or its observation stored)
    before, in an iteration now replayed, or its time ran out while the local engine was stopped.
    """
    stored = runtime.store.read_iteration(
        event.run_id, event.iteration, meta=True, decision=True, observation_slot=observation_slot(event.index)
    )
    assert stored.meta is not None  # read_iteration raises RunNotFound without it
    refuse_ended(stored.meta)
    if stored.observation is not None:
        raise ApprovalSettled(f"call {event.call.call_id} already has its observation")
    call = stored_call(stored.decision.calls if stored.decision else None, event.call.call_id, event.index)
    if call is None:
        raise ApprovalSettled(f"call {event.call.call_id} is not call {event.index} of iteration {event.iteration}")
    now = runtime.clock()
    timeout = event.call.approval_timeout_seconds or 1
    approvals = runtime.store.approvals
    approval = approvals.request(
        event.run_id,
        event.iteration,
        event.index,
        call,
        owner=stored.meta.owner,
        token=event.task_token,
        now=now,
        timeout_at=now + timeout,
        expires_at=stored.meta.expires_at,
    )
    if approval.pending and approval.timeout_at <= now:
        approval = approvals.settle(approval, "timed_out", reason=None)
    if not approval.pending:
        approvals.mark_running_unless_waiting(event.run_id)
        raise ApprovalSettled(f"call {call.id} was already {approval.status}")
    # not marked when the call was answered since it was stored: the answer's Step Functions callback goes on
    approvals.mark_waiting(approval)
    metrics.add_metric(name="ApprovalsRequested", unit="Count", value=1)
    logger.info("waiting for approval", extra={"run_id": event.run_id, "tool": call.name, "call_id": call.id})
    return {"call_id": call.id, "waiting": True}


def _answer_of(outcome: Any) -> tuple[ApprovalStatus, str | None, bool]:
    """How a wait ended, from what reached ToolInvoke (SendTaskSuccess's output or a caught error): the
    status, the reason, and whether a person gave it."""
    if isinstance(outcome, dict) and "Error" in outcome:
        error, cause = outcome.get("Error"), outcome.get("Cause")
        if error in _TIMEOUT_ERRORS:
            return "timed_out", None, True
        if error == ApprovalDenied.__name__:
            return "denied", cause if isinstance(cause, str) and cause else None, True
        return "denied", f"the wait for approval failed ({error})", False
    if isinstance(outcome, dict) and "Payload" in outcome:
        # a plain invocation's result: an Express workflow, which cannot wait for a callback
        return "denied", "approval needs a Standard workflow; this run's Express workflow cannot wait for one", False
    if isinstance(outcome, dict) and outcome.get("approved") is True:
        return "approved", None, True
    reason = outcome.get("reason") if isinstance(outcome, dict) else None
    return "denied", reason if isinstance(reason, str) and reason else None, True


def _settled(approval: Approval, status: ApprovalStatus, reason: str | None, runtime: StepRuntime) -> Approval:
    approvals = runtime.store.approvals
    if status == "timed_out":
        # The wait timed out: an answer stored since came too late to reach Step Functions (the API said
        # so to whoever gave it), so the call is not run whatever that answer was.
        return approvals.settle(approval, status, reason=None, overrule=approval.status != "timed_out")
    if approval.pending:
        return approvals.settle(approval, status, reason=reason)
    return approval


# The API may undo its answer once between our read and our consume (it did not hear Step Functions took it)
_CONSUME_ATTEMPTS = 2


def settle_approval(run_id: str, iteration: int, index: int, outcome: Any, runtime: StepRuntime) -> Verdict:
    """Whether the call may run. The stored answer wins (the API records it before it answers the
    token); a call still pending takes what the wait ended with, and is recorded so. The outcome acted
    on is marked consumed, so the API never undoes an answer that reached Step Functions."""
    approvals = runtime.store.approvals
    approval: Approval | None = approvals.get(run_id, iteration, index)
    if approval is None:
        # the wait never stored the call: it cannot have been approved
        return Verdict(
            approved=False, status="denied", reason="no approval was requested for this call", by_approver=False
        )
    status, reason, by_approver = _answer_of(outcome)
    for _ in range(_CONSUME_ATTEMPTS):
        approval = _settled(approval, status, reason, runtime)
        try:
            approval = approvals.consume(approval)
            break
        except StoredApprovalChanged as changed:
            approval = changed.approval
    approvals.mark_running_unless_waiting(run_id)
    approved = approval.status == "approved"
    metrics.add_metric(name="ApprovalsGranted" if approved else "ApprovalsRefused", unit="Count", value=1)
    # an answer stored through the API is a person's, whatever the wait itself ended with
    by_approver = by_approver or approval.answered_by is not None
    note = ApprovalNote(
        status=approval.status,
        answered_by=approval.answered_by,
        answered_at=approval.answered_at,
        reason=approval.reason,
        arguments_sha256=approval.arguments_sha256,
    )
    return Verdict(
        approved=approved, status=approval.status, reason=approval.reason, by_approver=by_approver, note=note
    )
