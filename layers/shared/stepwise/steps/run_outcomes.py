"""Recording a run's failure or cancellation on META, with what it spent, once.

FormatFailure records a caught error, ExecutionEnded an execution that ended without recording its
run, and the API's cancel route a cancellation; each write is conditional on the run being open, so
the first outcome wins and the run-ended metrics are counted by the write that recorded it. Such a run
has no answer: its outcome is `none` (`stepwise.steps.outcome`). A run that ends while a call waits for
approval (its META WAITING_APPROVAL) has its waiting calls withdrawn from the owner's index of them.
"""

from __future__ import annotations

import json

from stepwise.errors import ConfigError, provider_status, provider_wait
from stepwise.models.run import OPEN_STATUSES, RunError, RunMeta, RunStatus, StopReason
from stepwise.models.step_record import tools_called
from stepwise.steps.budgets import priced_usage
from stepwise.steps.child_ends import answer_parent
from stepwise.steps.executions import ExecutionStopFailed
from stepwise.steps.run_metrics import record_run_ended
from stepwise.steps.runtime import StepRuntime
from stepwise.store import RunAlreadyEnded
from stepwise.telemetry.observability import logger, metrics

# The model errors a run survives, by the name the state machine caught, and the stop reason each gives.
MODEL_ERROR_STOPS: dict[str, StopReason] = {
    "LLMDeadlineReached": "deadline",
    "ContextWindowExceeded": "context_window",
    "ContextWindowExhausted": "context_window",
    "LLMPermanentError": "model_error",
    # retried by the state machine until its attempts ran out
    "LLMTransientError": "model_error",
}


def failure_message(error: str, cause: str | None) -> str:
    """The readable part of a Step Functions error cause (Lambda puts a JSON document there)."""
    if not cause:
        return error
    try:
        decoded = json.loads(cause)
    except json.JSONDecodeError:
        return cause
    if isinstance(decoded, dict) and decoded.get("errorMessage"):
        return str(decoded["errorMessage"])
    return cause


def run_error(error_name: str, cause: str | None) -> RunError:
    """The error a run ended with, as stored: a model error also names the provider's HTTP status and the
    wait it asked for, when its text says them (an error crosses the state machine as text)."""
    message = failure_message(error_name, cause)
    if error_name not in MODEL_ERROR_STOPS:
        return RunError(type=error_name, message=message)
    return RunError(
        type=error_name,
        message=message,
        provider_status=provider_status(message),
        retry_after_seconds=provider_wait(message),
    )


def record_failure(
    meta: RunMeta, error_name: str, cause: str | None, runtime: StepRuntime, *, iteration: int | None = None
) -> RunMeta:
    """Record the run FAILED (TIMED_OUT for `States.Timeout`), without an answer, with the error that ended
    it; returns META as stored, which holds the outcome recorded first if another write won. A run that
    was WAITING_APPROVAL has its waiting calls withdrawn from the owner's index first."""
    error = run_error(error_name, cause)
    status: RunStatus = "TIMED_OUT" if error_name == "States.Timeout" else "FAILED"
    if meta.status == "WAITING_APPROVAL":
        # its execution is over, so its waiting calls will never be answered: out of the owner's listing of
        # what waits, before the end is recorded, since an event delivered again finds the run ended and
        # would not look again
        runtime.store.approvals.withdraw(meta.run_id)
    steps = runtime.store.list_steps(meta.run_id)
    usage = priced_usage(meta.profile, steps, runtime)
    finished = runtime.store.finish_run(
        meta,
        status,
        stop_reason="error",
        outcome="none",
        error=error,
        usage=usage,
        iteration=iteration,
        tools=tools_called(steps),
    )
    metrics.add_metric(name="RunsFailed", unit="Count", value=1)
    if finished.status == status:
        record_run_ended(status, "error", usage, finished.iteration)
    answer_parent(finished, runtime)
    logger.warning("run failed", extra={"run_id": meta.run_id, "error_type": error.type})
    return finished


def record_cancellation(meta: RunMeta, runtime: StepRuntime, *, by: str) -> RunMeta:
    """Record the run CANCELLED by `by` with what it spent until now (a step still running is not
    counted); `RunAlreadyEnded` if it ended first. Its running child runs are cancelled too (found through
    its links to them, `stepwise.store.child_runs`), and a parent waiting for it is answered."""
    steps = runtime.store.list_steps(meta.run_id)
    usage = priced_usage(meta.profile, steps, runtime)
    cancelled = runtime.store.directory.cancel_run(meta.run_id, by=by, usage=usage, tools=tools_called(steps))
    if meta.status == "WAITING_APPROVAL":
        # its waiting calls will never be answered: out of the owner's listing of what waits
        runtime.store.approvals.withdraw(meta.run_id)
    metrics.add_metric(name="RunsCancelled", unit="Count", value=1)
    record_run_ended("CANCELLED", "cancelled", cancelled.usage, cancelled.iteration)
    cancel_children(meta.run_id, runtime, by=by)
    answer_parent(cancelled, runtime)
    return cancelled


def cancel_children(run_id: str, runtime: StepRuntime, *, by: str) -> list[str]:
    """Cancel the open child runs of `run_id` (and theirs), and stop their executions; the ids cancelled.

    One Query of the run's links to its children and one BatchGetItem of their status; nothing else for a
    run that never delegated.
    """
    cancelled = []
    for link in runtime.store.child_runs.children(run_id):
        if link.status not in OPEN_STATUSES:
            continue
        child = runtime.store.get_run(link.run_id)
        if child is None:
            continue
        try:
            record_cancellation(child, runtime, by=by)
        except RunAlreadyEnded:
            continue
        stop_execution(link.run_id, runtime, cause=f"its parent run {run_id} was cancelled")
        cancelled.append(link.run_id)
    return cancelled


def stop_execution(run_id: str, runtime: StepRuntime, *, cause: str) -> None:
    """Stop a cancelled run's execution where Step Functions can be reached from here; otherwise its next
    step finds the run ended and stops it (every write of the loop is conditional on an open run)."""
    try:
        runtime.executions.stop(run_id, cause=cause)
    except (ConfigError, ExecutionStopFailed) as exc:
        logger.info(
            "a cancelled run's execution was left to end by itself", extra={"run_id": run_id, "error": str(exc)}
        )
