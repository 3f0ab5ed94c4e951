"""Approving or denying a tool call paused for approval: `POST /v1/runs/{run_id}/approvals/{call_id}`.

The answer is stored first — a conditional update, so of two answers only one wins, in one transaction
with a check that the run is open, so of an answer and a cancellation only one comes first — then given to
Step Functions with the call's task token: SendTaskSuccess to approve, SendTaskFailure (`ApprovalDenied`,
the reason as cause) to deny. An answer the run's end came before is refused with 409 `run_ended` and not
stored; one stored first stands, even when the run is cancelled while it is on its way (the stopped
execution then never acts on it). If the wait timed out before the token was answered, the answer is
undone, the call is not run and the answer is refused with 409; if Step Functions could not be reached, the
answer is undone too, so it can be sent again.

An answer may name the arguments it approves (`arguments_sha256`, as the views show it): when the call
waiting now has other arguments (the model reused the call id in a later iteration, say), the answer is
refused with 409 `approval_stale` and nothing is stored.
"""

from __future__ import annotations

from stepwise.errors import ApprovalDenied
from stepwise.models.api_requests import ApprovalRequest
from stepwise.models.api_responses import RunView
from stepwise.models.approval import Approval
from stepwise.models.run import RunMeta
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import ApprovalNotPending, ApprovalStale, NotFound, RunEnded
from stepwise.steps.api.run_views import describe_run, reported_status
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import CallbackFailed, TaskTokenGone
from stepwise.store import ConversationStore
from stepwise.store.approvals import ApprovalNotPending as StoredAnswerFirst
from stepwise.store.approvals import RunEndedFirst
from stepwise.telemetry.observability import logger, metrics


def _not_pending(run_id: str, approval: Approval) -> ApprovalNotPending:
    return ApprovalNotPending(
        f"call {approval.call_id} of run {run_id} is not waiting for approval: it was {approval.status}",
        details={"run_id": run_id, "call_id": approval.call_id, "status": approval.status},
    )


# A wait resumed under a new token (a restarted local engine) between reading the call and answering it
_TOKEN_CHANGES_TOLERATED = 3


def _store_answer(
    store: ConversationStore, run_id: str, approval: Approval, request: ApprovalRequest, owner: str
) -> Approval:
    """Store the answer for the call's current token; 409 once someone else's answer (or a timeout) won."""
    for _ in range(_TOKEN_CHANGES_TOLERATED):
        try:
            return store.approvals.answer(
                approval, "approved" if request.approved else "denied", reason=request.reason, by=owner
            )
        except StoredAnswerFirst as first:
            if not first.approval.pending:
                raise _not_pending(run_id, first.approval) from None
            approval = first.approval
    raise _not_pending(run_id, approval)


def _send(services: ApiServices, answered: Approval, request: ApprovalRequest) -> None:
    if request.approved:
        services.executions.send_task_success(answered.task_token, {"approved": True, "reason": request.reason})
    else:
        services.executions.send_task_failure(
            answered.task_token, error=ApprovalDenied.__name__, cause=request.reason or ""
        )


def _arrived(kept: Approval | None, answered: Approval) -> bool:
    """Whether an answer the API could not undo is the one ToolInvoke acted on."""
    return (
        kept is not None
        and kept.consumed_at is not None
        and (kept.status, kept.task_token) == (answered.status, answered.task_token)
    )


def _kept(services: ApiServices, run_id: str, answered: Approval) -> bool:
    """Whether an answer whose token Step Functions no longer knows is kept, its wait still having time.

    A restarted local engine resumes a waiting run under a new token, a little after it starts serving:
    an answer sent meanwhile reaches the old token. While the run is open, the stored answer is kept for
    the wait begun again, which finds it (`ApprovalSettled`) and ToolInvoke acts on it. A run that has
    ended was cancelled (or failed) after the answer was stored, the run being open then: the answer came
    first, and stands as long as nothing settled the call otherwise since.
    """
    if answered.timeout_at <= services.runtime.clock():
        return False
    store = services.runtime.store
    if not store.require_run(run_id).is_terminal:
        return True
    current = store.approvals.get(run_id, answered.iteration, answered.index)
    return current is not None and (current.status, current.task_token) == (answered.status, answered.task_token)


def _run_ended(services: ApiServices, meta: RunMeta) -> RunEnded:
    status, _ = reported_status(meta, now=services.runtime.clock(), grace_seconds=services.lost_run_grace_seconds)
    return RunEnded(
        f"run {meta.run_id} already ended {status}; there is no call to approve",
        details={"run_id": meta.run_id, "status": status},
    )


def _deliver(services: ApiServices, run_id: str, approval: Approval, request: ApprovalRequest, owner: str) -> None:
    """Store the answer, then give it to Step Functions with the call's token; undone if it did not arrive.

    A token Step Functions no longer knows means the wait timed out first (ToolInvoke then records the
    call as timed out and does not run it: 409), or a restarted local engine resumed it under a new token,
    to which the answer is sent again, or is resuming it, or the run ended after the answer was stored:
    then the stored answer is kept (`_kept`). An answer ToolInvoke has consumed did arrive, whatever the
    reply to it (lost, its retry told the token was gone).
    """
    store = services.runtime.store
    for _ in range(_TOKEN_CHANGES_TOLERATED):
        answered = _store_answer(store, run_id, approval, request, owner)
        try:
            _send(services, answered, request)
            return
        except (TaskTokenGone, CallbackFailed) as failed:
            if isinstance(failed, TaskTokenGone) and _kept(services, run_id, answered):
                return
            if _arrived(store.approvals.reopen(answered), answered):
                return
            if isinstance(failed, CallbackFailed):
                raise
        current = store.approvals.get(run_id, answered.iteration, answered.index)
        if current is None or not current.pending or current.task_token == answered.task_token:
            break
        approval = current
    meta = store.require_run(run_id)
    if meta.is_terminal:
        raise _run_ended(services, meta)
    raise ApprovalNotPending(
        f"call {approval.call_id} of run {run_id} is no longer waiting for approval: its wait ended",
        details={"run_id": run_id, "call_id": approval.call_id, "status": "timed_out"},
    )


def answer_approval(
    services: ApiServices, *, owner: str, run_reference: str, call_id: str, request: ApprovalRequest
) -> RunView:
    """Approve or deny the call `call_id` of the run, then show the run.

    404 when the run is not the caller's or has no such call waiting or answered; 409 when the run ended
    before the answer was stored or the call is not waiting (answered already, timed out); 503 when Step
    Functions could not be told (the answer is undone then, and may be sent again).
    """
    store = services.runtime.store
    run_id = parse_run_reference(run_reference)
    meta = visible_run(store, run_id, owner)
    if meta.is_terminal:
        raise _run_ended(services, meta)
    calls = [approval for approval in store.approvals.list(run_id) if approval.call_id == call_id]
    if not calls:
        raise NotFound(f"run {run_id} has no tool call {call_id} that needed approval")
    # a model may reuse a call id in a later iteration: the one waiting, else the latest
    approval = next((each for each in reversed(calls) if each.pending), calls[-1])
    if not approval.pending:
        raise _not_pending(run_id, approval)
    if request.arguments_sha256 is not None and request.arguments_sha256 != approval.arguments_sha256:
        raise ApprovalStale(
            f"call {call_id} of run {run_id} waits with other arguments than the answer names; read it again",
            details={"run_id": run_id, "call_id": call_id, "arguments_sha256": approval.arguments_sha256},
        )
    try:
        _deliver(services, run_id, approval, request, owner)
    except RunEndedFirst:
        raise _run_ended(services, store.require_run(run_id)) from None
    store.approvals.mark_running_unless_waiting(run_id)
    metrics.add_metric(name="ApprovalsAnswered", unit="Count", value=1)
    logger.info("approval answered", extra={"run_id": run_id, "call_id": call_id, "approved": request.approved})
    return describe_run(services, owner=owner, run_reference=run_id, trace=False)
