"""Online evals: the profile's checks, and its judge's rubric, applied to a sample of its runs as they end.

Format (or FormatFailure) writes the run's end first, then tells the state machine whether the run is in
its profile's sample (`stepwise.steps.online_eval_sample`); only then does the state `OnlineEval` invoke
`evaluate_run` in an invocation of its own, so a slow or failing judge never delays nor fails the end
that was recorded. The result is written once on META (`stepwise.store.online_evals`) and counted
(`OnlineEvalPassed`, `OnlineEvalFailed`, `OnlineEvalErrors`); the run's status and outcome are never
touched. An eval that cannot run (the judge unreachable, the profile gone from the configuration) is
recorded `error`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from stepwise.config.online_evals import OnlineEvals
from stepwise.errors import RunNotFound, StepwiseError
from stepwise.evals.checks import check_outcome
from stepwise.evals.judge import grade_reached
from stepwise.evals.outcome import outcome_from_store
from stepwise.models.online_eval import OnlineEvalCheck, OnlineEvalJudgement, OnlineEvalResult
from stepwise.models.run import RunMeta
from stepwise.steps.online_eval_sample import online_evals_of
from stepwise.steps.runtime import StepRuntime
from stepwise.store.trace import RunRecord
from stepwise.telemetry.observability import logger, metrics


def _seconds(meta: RunMeta) -> float:
    started, ended = (
        datetime.fromisoformat(value.replace("Z", "+00:00")) for value in (meta.created_at, meta.updated_at)
    )
    return max(0.0, (ended - started).total_seconds())


def _question(record: RunRecord) -> str:
    """The question the run was asked: the last user message it was created with."""
    opening = [message.content for message in record.messages if message.role == "user" and message.iteration == 0]
    return opening[-1] if opening else ""


def _judged(
    settings: OnlineEvals, meta: RunMeta, record: RunRecord, runtime: StepRuntime
) -> OnlineEvalJudgement | None:
    if settings.judge is None or settings.rubric is None:
        return None
    model = runtime.chat_model(settings.judge, profile=meta.profile)
    graded = grade_reached(model, settings.rubric, _question(record), meta.answer or "")
    return OnlineEvalJudgement(model=settings.judge, passed=graded.passed, reason=graded.reason or "")


def _evaluated(meta: RunMeta, record: RunRecord, runtime: StepRuntime, now: str) -> OnlineEvalResult:
    settings = online_evals_of(meta.profile, runtime)
    if settings is None:
        return OnlineEvalResult(verdict="error", error=f"profile {meta.profile} has no online_evals", evaluated_at=now)
    outcome = outcome_from_store(meta, record.steps, seconds=_seconds(meta))
    checks = [OnlineEvalCheck(**result.model_dump()) for result in check_outcome(settings.expect, outcome)]
    try:
        judgement = _judged(settings, meta, record, runtime)
    except StepwiseError as exc:
        return OnlineEvalResult(
            verdict="error", checks=checks, error=f"the judge could not grade: {type(exc).__name__}", evaluated_at=now
        )
    passed = all(check.passed for check in checks) and (judgement is None or judgement.passed)
    return OnlineEvalResult(verdict="passed" if passed else "failed", checks=checks, judge=judgement, evaluated_at=now)


def _now_iso(runtime: StepRuntime) -> str:
    return datetime.fromtimestamp(runtime.clock(), UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def evaluate_run(run_id: str, runtime: StepRuntime) -> OnlineEvalResult | None:
    """Evaluate the ended run `run_id` by its profile's `online_evals` and store the result once; None when
    there is nothing to do (the run is gone, not ended, or already evaluated). Never raises for the eval
    itself: what stopped it is recorded as an `error` result."""
    try:
        meta, _, record = runtime.store.final_record(run_id, 0)
    except RunNotFound:
        return None
    now = _now_iso(runtime)
    if not meta.is_terminal or meta.online_eval is not None:
        return None
    with runtime.spans.step("OnlineEval", run_id=run_id, trace=meta.trace):
        try:
            result = _evaluated(meta, record, runtime, now)
        except Exception as exc:  # whatever stops an eval is its result, never the run's
            logger.exception("online eval could not run", extra={"run_id": run_id})
            result = OnlineEvalResult(
                verdict="error", error=f"the eval could not run: {type(exc).__name__}", evaluated_at=now
            )
        if not runtime.store.online_evals.record(run_id, result):
            return None
    metrics.add_dimensions(profile=meta.profile)
    passed, failed = result.verdict == "passed", result.verdict == "failed"
    metrics.add_metric(
        name="OnlineEvalPassed" if passed else "OnlineEvalFailed" if failed else "OnlineEvalErrors",
        unit="Count",
        value=1,
    )
    logger.info("run evaluated online", extra={"run_id": run_id, "verdict": result.verdict})
    return result
