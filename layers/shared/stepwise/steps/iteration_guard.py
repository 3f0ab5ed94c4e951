"""IterationGuard: count the iteration, and make it the final round when a limit, the deadline or a budget
is reached."""

from __future__ import annotations

import time
from typing import Any

from stepwise.models.run import FinalRoundReason
from stepwise.models.state import BudgetWaitEvent, PauseWaitEvent, RunContext, StatePayload, parse_event
from stepwise.steps.budget_waits import after_wait, await_budget, wait_seconds
from stepwise.steps.budgets import budget_reached
from stepwise.steps.child_ends import with_children_spend
from stepwise.steps.context_state import next_request_may_pass_threshold
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.steering import after_pause, await_resume, cleared, pause_seconds
from stepwise.telemetry.observability import logger, metrics


def iteration_guard(
    payload: StatePayload, runtime: StepRuntime, *, budget: Any = None, resume: Any = None
) -> StatePayload:
    """Start the next iteration; on the last allowed one set `final_round` so the model must answer now.

    Only the first iteration talks to DynamoDB: it marks the run RUNNING and copies what the loop needs of
    META (profile, limits, deadline, expiry) into the payload. Later iterations decide from the payload
    alone, budgets included (LLMCall carries the run's spend in it), so the guard costs no request;
    Format records the iteration the run ended at. It also sets `context.compact` when the next request
    could pass the compaction threshold, which sends the iteration through Compact first.

    At a budget under `on_budget: ask` it starts no iteration: `next: await_budget` sends the run to wait
    for a person (`stepwise.steps.budget_waits`), after which the guard runs again with what the wait ended
    with (`budget`: the answer's output, the timeout the Catch put there, or a plain invocation's result).
    """
    started_ns = time.time_ns()
    iteration = payload.iteration + 1
    run = payload.run
    reason: FinalRoundReason | None = None
    if run is None:
        meta = runtime.store.begin_iteration(payload.run_id, iteration)
        run = RunContext.from_meta(meta)
        reason = meta.final_round_reason
    elif budget is None:
        # what the child runs of the iteration that just ended spent counts against this run's budget
        run = with_children_spend(payload, run, runtime)
    # the first iteration learns the run's trace from META: its span starts when the step did
    with runtime.spans.step("IterationGuard", run_id=payload.run_id, trace=run.trace, started_ns=started_ns):
        if budget is not None:
            waited = after_wait(payload.run_id, run, budget, runtime)
            run = waited.run
            if waited.ended is not None:
                return _ended_at_budget(payload, run, waited.ended)
            # Express: no wait was possible, so the run ends as `on_budget: end` makes it
            run = run.model_copy(update={"budget_wait_seconds": None}) if waited.final_round else run
        if resume is not None:
            payload = payload.model_copy(update={"context": cleared(payload.context)})
            if after_pause(payload.run_id, resume, runtime):
                return _ended_at_budget(payload, run, "deadline")
        elif payload.context.pause:
            # no iteration starts: the guard runs again once the wait ends, with the same payload
            seconds = pause_seconds(run, runtime.clock())
            context = payload.context.model_copy(update={"compact": False, "pause_seconds": seconds})
            return payload.model_copy(update={"next": "await_resume", "run": run, "context": context})
        return _guarded(payload, runtime, iteration, run, reason)


def _ended_at_budget(payload: StatePayload, run: RunContext, reason: FinalRoundReason) -> StatePayload:
    """The run ends now (after a wait at its budget, or a pause that lasted until its deadline) with its best
    answer (`limit_hit` routes to Format), at the iteration it stopped at."""
    return payload.model_copy(
        update={
            "final_round": True,
            "final_round_reason": reason,
            "next": "limit_hit",
            "calls": [],
            "run": run,
            "context": payload.context.model_copy(update={"compact": False}),
        }
    )


def _guarded(
    payload: StatePayload, runtime: StepRuntime, iteration: int, run: RunContext, reason: FinalRoundReason | None
) -> StatePayload:
    """The guard's decision for `iteration`: final round when a limit, the deadline or a budget is reached;
    at a budget under `on_budget: ask`, a wait for a person instead."""
    if reason is None:
        if iteration >= run.max_iterations:
            reason = "max_iterations"
        elif runtime.clock() >= run.deadline:
            reason = "deadline"
        else:
            reason = budget_reached(run)
            if reason is not None and run.budget_wait_seconds is not None:
                wait = wait_seconds(run, runtime.clock())
                logger.info("budget reached: asking", extra={"run_id": payload.run_id, "reason": reason})
                # no iteration starts: the guard runs again once the wait ends, with the same payload
                return payload.model_copy(
                    update={
                        "next": "await_budget",
                        "run": run.model_copy(update={"budget_wait_seconds": wait}),
                        "context": payload.context.model_copy(update={"compact": False}),
                    }
                )
        if reason is not None:
            logger.info("final round", extra={"run_id": payload.run_id, "iteration": iteration, "reason": reason})
    final_round = reason is not None
    # the last iteration's calls are still in the payload: each may have added a tool result
    compact = next_request_may_pass_threshold(payload.model_copy(update={"iteration": iteration}))
    if compact:
        logger.info("compaction first", extra={"run_id": payload.run_id, "iteration": iteration})
    metrics.add_metric(name="Iterations", unit="Count", value=1)
    return payload.model_copy(
        update={
            "iteration": iteration,
            "final_round": final_round,
            "final_round_reason": reason,
            "next": "final_round" if final_round else "continue",
            "calls": [],
            "run": run,
            "context": payload.context.model_copy(update={"compact": compact}),
        }
    )


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event, run the step, return the next payload; an event with a task
    token is the wait at the budget (AwaitBudget) or of a paused run (AwaitResume, `pause: true`)."""
    if isinstance(event, dict) and "task_token" in event:
        if "pause" in event:
            return await_resume(parse_event(PauseWaitEvent, event), runtime)
        return await_budget(parse_event(BudgetWaitEvent, event), runtime)
    # after a wait, AwaitBudget's or AwaitResume's ResultPath put what it ended with beside the payload
    waited = ("budget", "resume")
    budget = event.get("budget") if isinstance(event, dict) else None
    resume = event.get("resume") if isinstance(event, dict) else None
    payload = {key: value for key, value in event.items() if key not in waited} if isinstance(event, dict) else event
    return iteration_guard(parse_event(StatePayload, payload), runtime, budget=budget, resume=resume).model_dump()
