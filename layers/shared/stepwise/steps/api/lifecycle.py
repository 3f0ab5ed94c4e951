"""Listing a caller's runs and cancelling one: the logic of `GET /v1/runs` and `POST /v1/runs/{id}/cancel`.

The listing reads the owner index (or the session's partition) only, never a Scan; its cursor is an
opaque token holding the position of the last run returned. Cancelling records `CANCELLED` on META
first — a conditional write, so it loses to an outcome already recorded and wins over every later
write of the loop, which are all conditional on an open status — then stops the execution.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re

from stepwise.models.api_responses import RunList, RunListItem, RunView
from stepwise.models.run import OPEN_STATUSES, RunStatus, RunSummary
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import InvalidRequest, RunEnded
from stepwise.steps.api.run_views import describe_run, reported_status
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import ExecutionStopFailed
from stepwise.steps.outcome import needs_answer, outcome_of
from stepwise.steps.run_outcomes import record_cancellation
from stepwise.store import RunAlreadyEnded
from stepwise.store.run_filters import RunFilter
from stepwise.telemetry.observability import logger

# Version 2 names the filters a cursor was returned under: sent with others it is refused, not read as a
# place in another listing (it would skip that listing's newer runs). A version-1 cursor, from before, is read
# as it was meant: the console keeps cursors in the page's address, which a bookmark keeps.
CURSOR_VERSION = 2
_UNBOUND_VERSION = 1
_RUN_ORDER = re.compile(r"^\d{4}-\d{2}-\d{2}T[0-9:.]+Z#[A-Za-z0-9_-]{1,80}$")
_CURSOR_FIELD = "cursor (query parameter)"
_NOT_A_CURSOR = "not a cursor this API returned"
_OTHER_FILTERS = (
    "a cursor of a listing with other filters: send it with the status, session_id and filters of the request "
    "that returned it (only limit may change), or leave it out to start again"
)


def listing_tag(status: RunStatus | None, session_id: str | None, filters: RunFilter | None) -> str:
    """What a cursor keeps of the listing it was returned for: its filters, as a short digest."""
    chosen = (filters or RunFilter()).model_dump(mode="json", exclude={"status", "lost_deadline_before"})
    document = json.dumps({"status": status, "session_id": session_id, **chosen}, sort_keys=True)
    return hashlib.sha256(document.encode("utf-8")).hexdigest()[:16]


def encode_cursor(run_order: str, listing: str) -> str:
    """The opaque cursor that continues the listing `listing` (`listing_tag`) below `run_order`."""
    document = json.dumps({"v": CURSOR_VERSION, "q": listing, "after": run_order}, separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, listing: str) -> str:
    """The position a cursor of the listing `listing` holds; 422 naming the cursor for anything this API did not
    hand out, and for a cursor it handed out for a listing with other filters."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        document = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidRequest.of(_CURSOR_FIELD, _NOT_A_CURSOR) from None
    if not isinstance(document, dict):
        raise InvalidRequest.of(_CURSOR_FIELD, _NOT_A_CURSOR)
    position = document.get("after")
    version = document.get("v")
    bound = version == CURSOR_VERSION and isinstance(document.get("q"), str)
    readable = isinstance(position, str) and _RUN_ORDER.fullmatch(position) is not None
    if not (bound or version == _UNBOUND_VERSION) or not readable or not isinstance(position, str):
        raise InvalidRequest.of(_CURSOR_FIELD, _NOT_A_CURSOR)
    if bound and document["q"] != listing:
        raise InvalidRequest.of(_CURSOR_FIELD, _OTHER_FILTERS)
    return position


def _list_item(summary: RunSummary, status: RunStatus, answers: dict[str, str | None]) -> RunListItem:
    return RunListItem(
        question=summary.question,
        # META holds a run's usage once it ended; an open run's is not counted yet (its trace has it)
        usage=summary.usage if status not in OPEN_STATUSES and summary.status not in OPEN_STATUSES else None,
        run_id=summary.run_id,
        status=status,
        profile=summary.profile,
        session_id=summary.session_id,
        iterations=summary.iteration,
        stop_reason=summary.stop_reason,
        outcome=outcome_of(status, summary.stop_reason, summary.outcome, answers.get(summary.run_id))
        if status == summary.status
        else "none",
        metadata=summary.metadata,
        created_at=summary.created_at,
        updated_at=summary.updated_at,
    )


def list_runs(
    services: ApiServices,
    *,
    owner: str,
    limit: int,
    status: RunStatus | None = None,
    session_id: str | None = None,
    cursor: str | None = None,
    filters: RunFilter | None = None,
) -> RunList:
    """`GET /v1/runs`: the caller's runs, newest first, with the status each would be reported with, kept by
    `status` and `filters` (the store's; `status` is matched as reported, a lost run as TIMED_OUT)."""
    now = services.runtime.clock()
    grace = services.lost_run_grace_seconds
    listing = listing_tag(status, session_id, filters)
    wanted = (filters or RunFilter()).model_copy(update={"status": status, "lost_deadline_before": now - grace})

    def shown_status(summary: RunSummary) -> RunStatus:
        # A listing reports what GET /v1/runs/{id} would: a run lost past its deadline is TIMED_OUT.
        if summary.status in OPEN_STATUSES and now > summary.deadline + grace:
            return "TIMED_OUT"
        return summary.status

    page = services.runtime.store.directory.list_runs(
        owner,
        limit=limit,
        session_id=session_id,
        before=decode_cursor(cursor, listing) if cursor else None,
        filters=wanted,
        accept=lambda summary: status is None or shown_status(summary) == status,
    )
    # Runs stored before outcomes were recorded, and stopped by a limit: their answer tells theirs.
    undecided = [run.run_id for run in page.runs if needs_answer(run.status, run.stop_reason, run.outcome)]
    answers = services.runtime.store.directory.answers(undecided) if undecided else {}
    return RunList(
        runs=[_list_item(summary, shown_status(summary), answers) for summary in page.runs],
        next_cursor=encode_cursor(page.next_after, listing) if page.next_after else None,
        searched_until=page.stopped_at.split("#", 1)[0] if page.stopped_at else None,
    )


def cancel_run(services: ApiServices, *, owner: str, run_reference: str) -> RunView:
    """`POST /v1/runs/{run_id}/cancel`: record CANCELLED (by `owner`, now), then stop the execution.

    409 when the run ended first. A failure to stop the execution is logged, not returned: the run is
    already CANCELLED, and its execution ends at its next step, whose writes are all refused.
    """
    run_id = parse_run_reference(run_reference)
    meta = visible_run(services.runtime.store, run_id, owner)
    try:
        record_cancellation(meta, services.runtime, by=owner)
    except RunAlreadyEnded as ended:
        status, _ = reported_status(
            ended.meta, now=services.runtime.clock(), grace_seconds=services.lost_run_grace_seconds
        )
        raise RunEnded(
            f"run {run_id} already ended {ended.meta.status}; there is nothing to cancel",
            details={"run_id": run_id, "status": status},
        ) from None
    # Express executions cannot be stopped (StopExecution is Standard-only); their next step ends them.
    if services.workflow_type == "STANDARD":
        try:
            services.executions.stop(run_id, cause="cancelled through the API")
        except ExecutionStopFailed as exc:
            logger.warning(
                "the cancelled run's execution could not be stopped", extra={"run_id": run_id, "error": str(exc)}
            )
    logger.info("run cancelled", extra={"run_id": meta.run_id})
    return describe_run(services, owner=owner, run_reference=run_id, trace=False)
