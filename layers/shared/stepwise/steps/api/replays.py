"""Replaying a run through the API: the logic of `POST /v1/runs/{run_id}/replay`.

Only the run's owner may replay it (anyone else gets 404, as for a run that does not exist); the replay
is a new run of the same owner, started at once. Its tool calls are answered from the stored recording,
so it costs model tokens only (see `stepwise.steps.replays`).
"""

from __future__ import annotations

from stepwise.models.api_requests import ReplayRequest
from stepwise.models.api_responses import ReplayAccepted
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.runs import start_queued_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.replays import ReplayRefused, prepare_replay
from stepwise.telemetry.observability import logger


def replay_run(
    services: ApiServices, *, owner: str, run_reference: str, request: ReplayRequest, base_path: str = ""
) -> ReplayAccepted:
    """Store the replay of the caller's run and start it; 404 unless the caller owns the run, 422 naming the
    field when the run is still going, `from_iteration` is past its iterations or the profile is unknown."""
    run_id = parse_run_reference(run_reference)
    original = visible_run(services.runtime.store, run_id, owner)
    try:
        meta = prepare_replay(
            services.runtime,
            original,
            owner=owner,
            profile=request.profile,
            from_iteration=request.from_iteration,
            live_tools=request.live_tools,
            metadata=request.metadata,
            ttl_days=services.ttl_days,
            workflow_type=services.workflow_type,
        )
    except ReplayRefused as exc:
        field = "run_id (path parameter)" if exc.field == "run_id" else exc.field
        raise InvalidRequest.of(field, exc.reason) from None
    start_queued_run(services, meta)
    logger.info("replay started", extra={"run_id": meta.run_id, "original_run_id": run_id})
    return ReplayAccepted(
        run_id=meta.run_id,
        status=meta.status,
        profile=meta.profile,
        intent=meta.intent,
        session_id=meta.session_id,
        poll_url=f"{base_path}/v1/runs/{meta.run_id}",
        original_run_id=run_id,
        from_iteration=request.from_iteration,
    )
