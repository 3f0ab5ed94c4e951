"""A child run's end reaches its parent: the end answers the parent's wait, and what the child spent joins
the parent's spend.

Every write that records a run's end returns META as it then is; a child's META holds the parent's task token
once the parent waits (`stepwise.store.child_runs`), so the writer of the end answers it. A token already used
or timed out is no error: the parent acts on the child's stored end either way.
"""

from __future__ import annotations

from stepwise.errors import ConfigError
from stepwise.models.run import RunMeta
from stepwise.models.state import RunContext, StatePayload
from stepwise.steps.budgets import with_delegated
from stepwise.steps.runtime import StepRuntime
from stepwise.telemetry.observability import logger


def answer_parent(meta: RunMeta, runtime: StepRuntime) -> None:
    """Answer the parent's wait for this run, once it has ended and a parent waits for it.

    When Step Functions cannot be reached, the parent's wait runs to its timeout, and the parent then reads
    the child's stored end as it would have.
    """
    if meta.parent_task_token is None or not meta.is_terminal:
        return
    # only a child run's end answers a wait: the Step Functions client's errors load then
    from stepwise.steps.executions import CallbackFailed, TaskTokenGone

    try:
        runtime.executions.send_task_success(
            meta.parent_task_token, {"child_run_id": meta.run_id, "status": meta.status}
        )
    except TaskTokenGone:
        pass  # answered already (a repeated end), or the parent no longer waits
    except (CallbackFailed, ConfigError) as exc:
        logger.warning(
            "a child run's end could not answer its parent's wait",
            extra={"run_id": meta.run_id, "parent_run_id": meta.parent_run_id, "error": str(exc)},
        )


def with_children_spend(payload: StatePayload, run: RunContext, runtime: StepRuntime) -> RunContext:
    """`run` with what the child runs of the iteration that just ended spent added to its spend.

    Only an iteration with agent calls reads anything: one BatchGetItem of those calls' trace steps, which
    hold each child's usage (an ordinary iteration's guard still makes no request).
    """
    if payload.next != "tool_calls":
        return run
    indexes = [index for index, call in enumerate(payload.calls) if call.child_timeout_seconds is not None]
    if not indexes:
        return run
    steps = runtime.store.child_runs.call_steps(payload.run_id, payload.iteration, indexes)
    usages = [step.child_usage for step in steps if step.child_usage is not None]
    return run.model_copy(update={"spend": with_delegated(run.spend, usages)})
