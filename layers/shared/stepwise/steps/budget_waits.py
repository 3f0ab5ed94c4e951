"""Budgets that ask (`limits.on_budget: ask`): the wait at the budget, and what IterationGuard does after it.

IterationGuard, finding the run at its token or cost budget, does not start the final round: it hands the
payload to AwaitBudget, a callback task (`lambda:invoke.waitForTaskToken`) of its own function, which
stores the task token on META and marks the run `WAITING_BUDGET`, then returns; the execution waits until
`POST /v1/runs/{id}/budget` answers the token, or the wait times out. IterationGuard then runs again with
what the wait ended with: raised caps (the run goes on, asking again if it is still at its budget), an end
or a timeout (the run ends now with its best answer: Format, no further model call), or, on an Express
workflow, which cannot wait for a callback, a plain invocation's result (the run ends as `on_budget: end`
makes it: a final round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.errors import RunNotFound
from stepwise.models.budget import BudgetReason, BudgetWait
from stepwise.models.state import BudgetWaitEvent, RunContext
from stepwise.steps.budgets import budget_reached, total_spend
from stepwise.steps.runtime import StepRuntime
from stepwise.telemetry.observability import logger, metrics

_TIMEOUT_ERRORS = ("States.Timeout", "States.HeartbeatTimeout")


class RaisedCaps(BaseModel):
    """What the API sends the wait's token when it raises the budget: the run's caps as they now are."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


@dataclass(frozen=True)
class AfterWait:
    """How a wait at the budget ended: the run's context (with raised caps), and whether the run ends now
    (`ended`, with its best answer) or through a final round (`final_round`, where no wait was possible)."""

    run: RunContext
    ended: BudgetReason | None = None
    final_round: BudgetReason | None = None


def wait_seconds(run: RunContext, now: float) -> int:
    """How long a wait beginning `now` may last: the configured wait, cut to what is left before the run's
    deadline (at least a second, for a run at its deadline), so a wait never outlives its run."""
    configured = run.budget_wait_seconds or 1
    return max(1, min(configured, int(run.deadline - now)))


def await_budget(event: BudgetWaitEvent, runtime: StepRuntime) -> dict[str, Any]:
    """Store the wait and its task token on META and mark the run WAITING_BUDGET.

    `RunNotFound` (caught to FormatFailure, which finds the end recorded) when the run ended first.
    """
    run = event.run
    reason: BudgetReason = budget_reached(run) or "token_budget"
    # what the budget counted, the child runs' spend included: a wait never shows less than the cap it reached
    spent_tokens, spent_usd = total_spend(run.spend)
    wait = BudgetWait(
        iteration=event.iteration,
        reason=reason,
        spent_tokens=spent_tokens,
        spent_usd=spent_usd,
        timeout_at=runtime.clock() + (run.budget_wait_seconds or 1),
    )
    with runtime.spans.step("AwaitBudget", run_id=event.run_id, trace=run.trace):
        if not runtime.store.budget_waits.begin(event.run_id, wait, event.task_token):
            raise RunNotFound(f"run {event.run_id} ended before it could wait at its budget")
    metrics.add_metric(name="BudgetWaits", unit="Count", value=1)
    logger.info("waiting at the budget", extra={"run_id": event.run_id, "reason": reason})
    return {"waiting": True}


def after_wait(run_id: str, run: RunContext, outcome: Any, runtime: StepRuntime) -> AfterWait:
    """What the run does once its wait at the budget ended with `outcome` (see the module's docstring)."""
    reason: BudgetReason = budget_reached(run) or "token_budget"
    if isinstance(outcome, dict) and outcome.get("Error") in _TIMEOUT_ERRORS:
        runtime.store.budget_waits.resume(run_id)
        logger.info("the wait at the budget timed out: the run ends", extra={"run_id": run_id, "reason": reason})
        metrics.add_metric(name="BudgetWaitsTimedOut", unit="Count", value=1)
        return AfterWait(run=run, ended=reason)
    if isinstance(outcome, dict) and "Payload" in outcome:
        runtime.store.budget_waits.resume(run_id)
        logger.info(
            "an Express workflow cannot wait at the budget: the run ends as on_budget: end makes it",
            extra={"run_id": run_id, "reason": reason},
        )
        return AfterWait(run=run, final_round=reason)
    if isinstance(outcome, dict) and outcome.get("end") is True:
        logger.info("the budget's wait was answered: end", extra={"run_id": run_id, "reason": reason})
        return AfterWait(run=run, ended=reason)
    try:
        caps = RaisedCaps.model_validate(outcome)
    except ValidationError:
        caps = RaisedCaps()
    if caps.max_total_tokens is None and caps.max_cost_usd is None:
        # a token answered around the API, with nothing it could act on: the run ends as if it was told to
        logger.warning("the budget's wait was answered without caps: the run ends", extra={"run_id": run_id})
        return AfterWait(run=run, ended=reason)
    raised = {name: value for name, value in caps.model_dump().items() if value is not None}
    logger.info("the budget was raised", extra={"run_id": run_id} | raised)
    metrics.add_metric(name="BudgetsRaised", unit="Count", value=1)
    return AfterWait(run=run.model_copy(update=raised))
