"""Reading runs back: the logic of `GET /v1/runs/{run_id}`, and the status and trace steps every read shows.

Kept apart from `runs` (which starts runs: intent, budgets, the execution) so that what only reads a run,
the streaming function's run events above all, does not load how runs are started.
"""

from __future__ import annotations

from stepwise.models.api_responses import RunView, TraceStep
from stepwise.models.budget import BudgetWaitView
from stepwise.models.pause import PauseView
from stepwise.models.run import Outcome, RunError, RunMeta, RunStatus
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.approval_views import pending_approvals
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.budgets import priced_usage
from stepwise.steps.guardrail_points import shown_guardrails, step_screen
from stepwise.steps.outcome import run_outcome

OBSERVATION_SUMMARY_CHARS = 500


def reported_status(meta: RunMeta, *, now: float, grace_seconds: float) -> tuple[RunStatus, RunError | None]:
    """The status to report: a run still open `grace_seconds` past its deadline was lost, so TIMED_OUT."""
    if not meta.is_terminal and now > meta.deadline + grace_seconds:
        overdue = round(now - meta.deadline)
        error = RunError(
            type="RunLost",
            message=f"the run was still {meta.status} {overdue} s after its deadline; its execution ended without it",
        )
        return "TIMED_OUT", error
    return meta.status, meta.error


def reported_outcome(meta: RunMeta, status: RunStatus) -> Outcome | None:
    """The outcome to report beside `status` (`reported_status`'s): a run reported lost gave no answer."""
    return run_outcome(meta) if status == meta.status else "none"


def trace_step(record: StepRecord) -> TraceStep:
    """A stored trace step as the API shows it, with the observation cut to a summary."""
    observation = record.observation
    if observation is not None and len(observation) > OBSERVATION_SUMMARY_CHARS:
        observation = observation[:OBSERVATION_SUMMARY_CHARS] + "…"
    fields = record.model_dump(exclude={"action", "observation"})
    return TraceStep(**fields, tool=record.action, observation=observation)


def describe_run(services: ApiServices, *, owner: str, run_reference: str, trace: bool) -> RunView:
    """`GET /v1/runs/{run_id}`: the run as stored, read from DynamoDB only; 404 unless `owner` owns it."""
    store = services.runtime.store
    run_id = parse_run_reference(run_reference)
    meta = visible_run(store, run_id, owner)
    status, error = reported_status(meta, now=services.runtime.clock(), grace_seconds=services.lost_run_grace_seconds)
    steps = store.list_steps(run_id) if trace else None
    # the model's text is stored as it wrote it: the output's pii rules apply to it as it is shown
    screen = step_screen(shown_guardrails(services.runtime, meta.profile))
    # META holds the usage once the run ended; while it runs, the trace (if read anyway) gives it so far
    usage = (
        priced_usage(meta.profile, steps, services.runtime)
        if steps is not None and not meta.is_terminal
        else meta.usage
    )
    return run_view(meta).model_copy(
        update={
            "status": status,
            "outcome": reported_outcome(meta, status),
            "error": error,
            "usage": usage,
            "trace": [screen(trace_step(step)) for step in steps] if steps is not None else None,
            "pending_approvals": pending_approvals(store, run_id) if status == "WAITING_APPROVAL" else None,
            # read only for a profile that delegates: a GET of any other run costs what it did
            "child_runs": store.child_runs.children(run_id) if _delegates(services, meta.profile) else None,
        }
    )


def _delegates(services: ApiServices, profile: str) -> bool:
    agent = services.runtime.config.profiles.get(profile)
    return agent is not None and bool(agent.agents)


def run_view(meta: RunMeta) -> RunView:
    """The run as `GET /v1/runs/{run_id}` shows it, from its META alone (as stored: no trace, no approvals);
    `stepwise run --json` prints it, so the command and the API name each field alike."""
    return RunView(
        run_id=meta.run_id,
        status=meta.status,
        profile=meta.profile,
        intent=meta.intent,
        intent_outcome=meta.intent_outcome,
        session_id=meta.session_id,
        metadata=meta.metadata,
        created_at=meta.created_at,
        updated_at=meta.updated_at,
        iterations=meta.iteration,
        stop_reason=meta.stop_reason,
        outcome=run_outcome(meta),
        answer=meta.answer,
        output=meta.output,
        output_error=meta.output_error,
        usage=meta.usage,
        error=meta.error,
        cancelled_by=meta.cancelled_by,
        cancelled_at=meta.cancelled_at,
        replay=meta.replay,
        budget_wait=BudgetWaitView.model_validate(meta.budget_wait.model_dump()) if meta.budget_wait else None,
        parent_run_id=meta.parent_run_id,
        parent_call_id=meta.parent_call_id,
        online_eval=meta.online_eval,
        # a pause asked of a run that ended before it reached an iteration boundary is no longer anything
        pause=PauseView.model_validate(meta.pause.model_dump()) if meta.pause and not meta.is_terminal else None,
    )
