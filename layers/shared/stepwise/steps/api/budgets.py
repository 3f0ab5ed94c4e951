"""Answering a run that waits at its budget (`on_budget: ask`): `POST /v1/runs/{run_id}/budget`.

The answer is stored first — one update of META conditional on `WAITING_BUDGET` and the wait's task token,
which also raises the caps in META's limits, so of two answers (or an answer and a cancellation) one wins —
then given to Step Functions with the token: SendTaskSuccess with the run's caps as they now are, or with
`{"end": true}`. If Step Functions no longer knows the token (the wait timed out first) or cannot be
reached, the stored answer is undone: 409, or 503 (it may then be sent again).
"""

from __future__ import annotations

from collections.abc import Callable

from stepwise.models.api_requests import BudgetRequest
from stepwise.models.api_responses import RunView
from stepwise.models.run import RunMeta
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import InvalidRequest, NotWaitingBudget, RunEnded
from stepwise.steps.api.run_views import describe_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import CallbackFailed, TaskTokenGone
from stepwise.store import ConversationStore
from stepwise.store.budget_waits import BudgetWaitChanged
from stepwise.telemetry.observability import logger, metrics


def _not_waiting(meta: RunMeta, why: str) -> NotWaitingBudget:
    return NotWaitingBudget(
        f"run {meta.run_id} is not waiting at its budget: {why}",
        details={"run_id": meta.run_id, "status": meta.status},
    )


def _raised_caps(meta: RunMeta, request: BudgetRequest) -> tuple[dict[str, int | float], dict[str, int | float]]:
    """The caps the request raises, as they become, and what it adds; 422 for a cap the run does not have."""
    caps: dict[str, int | float] = {}
    added: dict[str, int | float] = {}
    limits = meta.limits
    if request.add_tokens is not None:
        if limits.max_total_tokens is None:
            raise InvalidRequest.of("add_tokens", "the run has no token budget (max_total_tokens) to raise")
        caps["max_total_tokens"] = limits.max_total_tokens + request.add_tokens
        added["tokens"] = request.add_tokens
    if request.add_usd is not None:
        if limits.max_cost_usd is None:
            raise InvalidRequest.of("add_usd", "the run has no cost budget (max_cost_usd) to raise")
        caps["max_cost_usd"] = round(limits.max_cost_usd + request.add_usd, 6)
        added["usd"] = request.add_usd
    return caps, added


def deliver_budget_answer(
    store: ConversationStore,
    meta: RunMeta,
    request: BudgetRequest,
    *,
    by: str,
    send: Callable[[str, dict[str, object]], None],
) -> None:
    """Store the answer to the run's wait at its budget, then `send` it with the wait's token (SendTaskSuccess);
    undone when it did not arrive. 409 when the run ended or is not waiting at its budget, 422 when raising a
    cap the run does not have; `CallbackFailed` when Step Functions could not be reached."""
    run_id = meta.run_id
    if meta.is_terminal:
        raise RunEnded(f"run {run_id} already ended {meta.status}", details={"run_id": run_id, "status": meta.status})
    wait = meta.budget_wait
    if meta.status != "WAITING_BUDGET" or wait is None or wait.token is None or not wait.pending:
        raise _not_waiting(meta, f"it is {meta.status}")
    caps, added = _raised_caps(meta, request)
    previous = {name: getattr(meta.limits, name) for name in caps}
    try:
        answered_at = store.budget_waits.answer(
            run_id, wait.token, "ended" if request.end else "raised", by=by, caps=caps, added=added
        )
    except BudgetWaitChanged:
        raise _not_waiting(store.require_run(run_id), "it was answered, or its wait ended, first") from None
    # the guard takes the run's caps from here: both, as they now are, so a raise of one keeps the other
    now_capped = {"max_total_tokens": meta.limits.max_total_tokens, "max_cost_usd": meta.limits.max_cost_usd} | caps
    output: dict[str, object] = (
        {"end": True} if request.end else {name: value for name, value in now_capped.items() if value is not None}
    )
    try:
        send(wait.token, output)
    except (TaskTokenGone, CallbackFailed) as failed:
        store.budget_waits.undo(run_id, wait.token, answered_at, previous)
        if isinstance(failed, CallbackFailed):
            raise
        raise _not_waiting(store.require_run(run_id), "its wait ended before the answer reached it") from None
    metrics.add_metric(name="BudgetWaitsAnswered", unit="Count", value=1)
    logger.info("budget answered", extra={"run_id": run_id, "end": request.end} | caps)


def answer_budget(services: ApiServices, *, owner: str, run_reference: str, request: BudgetRequest) -> RunView:
    """Raise the budget of the run waiting at it, or end the run; then show the run.

    404 when the run is not the caller's; 409 when it ended or is not waiting at its budget (running,
    answered already, its wait over); 422 when raising a cap the run does not have; 503 when Step
    Functions could not be told (the answer is undone then, and may be sent again).
    """
    store = services.runtime.store
    run_id = parse_run_reference(run_reference)
    meta = visible_run(store, run_id, owner)
    deliver_budget_answer(store, meta, request, by=owner, send=services.executions.send_task_success)
    return describe_run(services, owner=owner, run_reference=run_id, trace=False)
