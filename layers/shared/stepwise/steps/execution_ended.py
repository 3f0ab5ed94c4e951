"""ExecutionEnded: a run whose execution ended without recording it gets its outcome from the execution.

FormatFailure records every caught error, but it can fail too (its own retries spent in a long DynamoDB
outage), and some ends bypass the definition altogether: the execution's `TimeoutSeconds`, or a
StopExecution from the console. Step Functions then sends a "Step Functions Execution Status Change"
event to EventBridge (Standard workflows only), and a rule of the template delivers FAILED, TIMED_OUT
and ABORTED ones here; an Express workflow's ends arrive from its log (`execution_log_events`). A run
still QUEUED, RUNNING or WAITING_APPROVAL is then recorded FAILED or
TIMED_OUT with the execution's error, or CANCELLED by `StopExecution`, and if it was WAITING_APPROVAL its
waiting calls leave the owner's index (`run_outcomes`: one Query of its approvals, one update each); a
run already ended (the usual case: FormatFailure recorded it before the Fail state) is left as it is,
after one GetItem.

Events arrive at least once and in any order, so each write is the store's conditional outcome write.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stepwise.models.run import RunMeta
from stepwise.models.state import RUN_ID_PATTERN, parse_event
from stepwise.steps.run_outcomes import record_cancellation, record_failure
from stepwise.steps.runtime import StepRuntime
from stepwise.store.directory import RunAlreadyEnded
from stepwise.telemetry.observability import logger, metrics

STOPPED_BY = "StopExecution"
"""Who a run stopped outside the API is recorded as cancelled by."""

EndedStatus = Literal["FAILED", "TIMED_OUT", "ABORTED"]
_RUN_ID = re.compile(RUN_ID_PATTERN)


class ExecutionStatusDetail(BaseModel, defer_build=True):
    """The `detail` of a "Step Functions Execution Status Change" event: the fields this step reads."""

    model_config = ConfigDict(extra="ignore")

    executionArn: str
    name: str
    status: EndedStatus
    input: str | None = None
    error: str | None = None
    cause: str | None = None


class ExecutionStatusChange(BaseModel, defer_build=True):
    """The EventBridge event Step Functions sends when an execution's status changes."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    source: Literal["aws.states"]
    detail_type: Literal["Step Functions Execution Status Change"] = Field(alias="detail-type")
    detail: ExecutionStatusDetail


class ExecutionEndOutcome(BaseModel):
    """What the event changed: the run's status after it, and whether this event recorded it."""

    run_id: str | None
    status: str | None
    recorded: bool


def _run_id(detail: ExecutionStatusDetail) -> str | None:
    """The run an execution belongs to: Stepwise puts the run id in the input, and names the execution by it."""
    try:
        document = json.loads(detail.input) if detail.input else None
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("run_id"), str):
        candidate: str = document["run_id"]
    else:
        candidate = detail.name
    return candidate if _RUN_ID.fullmatch(candidate) else None


def record_execution_end(event: ExecutionStatusChange, runtime: StepRuntime) -> ExecutionEndOutcome:
    """Record the outcome of a run whose execution ended FAILED, TIMED_OUT or ABORTED, unless it has one."""
    return record_ended_execution(event.detail, runtime)


def record_ended_execution(detail: ExecutionStatusDetail, runtime: StepRuntime) -> ExecutionEndOutcome:
    """Record the outcome of the run of an execution that ended as `detail` says, unless it has one."""
    run_id = _run_id(detail)
    meta = runtime.store.get_run(run_id) if run_id is not None else None
    if meta is None:
        logger.warning("an execution ended for no stored run", extra={"execution": detail.executionArn})
        return ExecutionEndOutcome(run_id=run_id, status=None, recorded=False)
    if meta.is_terminal:
        return ExecutionEndOutcome(run_id=meta.run_id, status=meta.status, recorded=False)
    with runtime.spans.step("ExecutionEnded", run_id=meta.run_id, trace=meta.trace):
        return _record_unrecorded_end(meta, detail, runtime)


def _record_unrecorded_end(meta: RunMeta, detail: ExecutionStatusDetail, runtime: StepRuntime) -> ExecutionEndOutcome:
    """Record the run CANCELLED (its execution was stopped) or FAILED / TIMED_OUT with what ended it."""
    metrics.add_metric(name="RunsEndedByExecution", unit="Count", value=1)
    logger.warning(
        "the execution ended without recording its run",
        extra={"run_id": meta.run_id, "execution_status": detail.status},
    )
    if detail.status == "ABORTED":
        try:
            cancelled = record_cancellation(meta, runtime, by=STOPPED_BY)
        except RunAlreadyEnded as ended:
            return ExecutionEndOutcome(run_id=meta.run_id, status=ended.meta.status, recorded=False)
        return ExecutionEndOutcome(run_id=meta.run_id, status=cancelled.status, recorded=True)
    error = "States.Timeout" if detail.status == "TIMED_OUT" else detail.error or "States.Runtime"
    cause = detail.cause or f"the execution ended {detail.status} before its run was recorded"
    finished = record_failure(meta, error, cause, runtime)
    return ExecutionEndOutcome(run_id=meta.run_id, status=finished.status, recorded=True)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the EventBridge event, then record the run's outcome if it has none. An Express
    workflow's ends come from its log instead (`execution_log_events`): each is recorded the same way."""
    from stepwise.steps import execution_log_events

    if execution_log_events.is_logs_subscription(event):
        ends = execution_log_events.execution_ends(event)
        ended = [record_ended_execution(ExecutionStatusDetail.model_validate(end), runtime) for end in ends]
        return {"ended": [outcome.model_dump() for outcome in ended]}
    return record_execution_end(parse_event(ExecutionStatusChange, event), runtime).model_dump()
