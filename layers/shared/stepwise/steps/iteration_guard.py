"""IterationGuard: count the iteration, and make it the final round when a limit, the deadline or a budget
is reached."""

from __future__ import annotations

from typing import Any

from stepwise.models.run import FinalRoundReason
from stepwise.models.state import StatePayload, parse_event
from stepwise.observability import logger, metrics
from stepwise.steps.budgets import budget_reached, has_budget
from stepwise.steps.runtime import StepRuntime


def iteration_guard(payload: StatePayload, runtime: StepRuntime) -> StatePayload:
    """Start the next iteration; on the last allowed one set `final_round` so the model must answer now."""
    iteration = payload.iteration + 1
    meta = runtime.store.begin_iteration(payload.run_id, iteration)
    reason: FinalRoundReason | None = meta.final_round_reason
    if reason is None:
        if iteration >= meta.limits.max_iterations:
            reason = "max_iterations"
        elif runtime.clock() >= meta.deadline:
            reason = "deadline"
        elif has_budget(meta):
            reason = budget_reached(meta, runtime)
        if reason is not None:
            runtime.store.set_final_round(payload.run_id, reason)
            logger.info("final round", extra={"run_id": payload.run_id, "iteration": iteration, "reason": reason})
    final_round = reason is not None
    metrics.add_metric(name="Iterations", unit="Count", value=1)
    return StatePayload(
        run_id=payload.run_id,
        iteration=iteration,
        final_round=final_round,
        next="final_round" if final_round else "continue",
    )


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event, run the step, return the next payload."""
    return iteration_guard(parse_event(StatePayload, event), runtime).model_dump()
