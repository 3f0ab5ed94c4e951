"""Steering a running run through the API: `POST /v1/runs/{run_id}/messages`, `/pause` and `/resume`.

- A message is checked like a run's input (the API's `max_input_chars`, the profile's input guardrails: a
  blocked one is refused, a redacted one stored redacted), then stored for the run's next model call
  (`stepwise.store.steering`); 409 once the run ended.
- A pause is asked on META; the run waits (PAUSED) at the next iteration boundary after its next Parse.
  Express workflows cannot wait for a callback, so their runs refuse to pause (409 `cannot_pause`).
- A resume withdraws a pause not reached yet, or answers the waiting run's task token (SendTaskSuccess)
  after setting it RUNNING; a token Step Functions no longer knows (the deadline came first) or a Step
  Functions it cannot reach undoes that (409, or 503).
"""

from __future__ import annotations

import secrets

from stepwise.models.api_requests import MessageRequest
from stepwise.models.api_responses import MessageAccepted, RunView
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunMeta
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import CannotPause, InvalidRequest, NotPaused, RunEnded
from stepwise.steps.api.run_views import describe_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import CallbackFailed, TaskTokenGone
from stepwise.steps.guardrail_points import guard_input
from stepwise.store.steering import RunClosed
from stepwise.telemetry.observability import logger, metrics

_ATTEMPTS = 3


def _ended(meta: RunMeta) -> RunEnded:
    return RunEnded(
        f"run {meta.run_id} already ended {meta.status}", details={"run_id": meta.run_id, "status": meta.status}
    )


def _open_run(services: ApiServices, owner: str, run_reference: str) -> RunMeta:
    """The caller's run, still open: 404 when it is not the caller's, 409 when it ended."""
    meta = visible_run(services.runtime.store, parse_run_reference(run_reference), owner)
    if meta.is_terminal:
        raise _ended(meta)
    return meta


def post_message(services: ApiServices, *, owner: str, run_reference: str, request: MessageRequest) -> MessageAccepted:
    """Store a message for the run's next model call, checked as a run's input is.

    404 when the run is not the caller's; 409 when it ended (before or as the message was stored); 422 when
    the message is over `max_input_chars` or an input guardrail blocked it.
    """
    meta = _open_run(services, owner, run_reference)
    limit = services.config.api.max_input_chars
    if len(request.content) > limit:
        raise InvalidRequest.of("content", f"at most {limit} characters, got {len(request.content)}")
    guarded = guard_input(services.runtime, meta.profile, [ChatMessage(role="user", content=request.content)])
    if guarded.blocked:
        raise InvalidRequest.of("content", "blocked by the profile's input guardrails")
    content = guarded.messages[0].content
    try:
        posted = services.runtime.store.steering.post(meta, secrets.token_hex(8), content, by=owner)
    except RunClosed:
        raise _ended(services.runtime.store.require_run(meta.run_id)) from None
    metrics.add_metric(name="MessagesPosted", unit="Count", value=1)
    logger.info("message posted", extra={"run_id": meta.run_id, "message_id": posted.message_id})
    return MessageAccepted(
        run_id=meta.run_id,
        message_id=posted.message_id,
        posted_at=posted.posted_at,
        content=content,
        status=meta.status,
    )


def pause_run(services: ApiServices, *, owner: str, run_reference: str) -> RunView:
    """Ask the run to pause at its next iteration boundary; asking again is harmless.

    404 when the run is not the caller's; 409 when it ended, or runs on an Express workflow.
    """
    meta = _open_run(services, owner, run_reference)
    if services.workflow_type == "EXPRESS":
        raise CannotPause(
            f"run {meta.run_id} runs on an Express workflow, which cannot wait for a callback",
            details={"run_id": meta.run_id, "status": meta.status},
        )
    store = services.runtime.store
    if not store.steering.request_pause(meta.run_id, by=owner):
        current = store.require_run(meta.run_id)
        if current.is_terminal:
            raise _ended(current)
    else:
        metrics.add_metric(name="PausesAsked", unit="Count", value=1)
        logger.info("pause asked", extra={"run_id": meta.run_id})
    return describe_run(services, owner=owner, run_reference=meta.run_id, trace=False)


def resume_run(services: ApiServices, *, owner: str, run_reference: str) -> RunView:
    """Take the run's pause off: withdraw it if the run does not wait yet, else answer the wait.

    404 when the run is not the caller's; 409 when it ended or is not paused; 503 when Step Functions could
    not be told (the run is PAUSED again, and the resume may be sent again).
    """
    meta = _open_run(services, owner, run_reference)
    store = services.runtime.store
    pause = meta.pause
    # the run may begin to wait between the read and the write: then the wait, as it now is, is answered
    for _ in range(_ATTEMPTS):
        if pause is None:
            raise NotPaused(f"run {meta.run_id} is not paused", details={"run_id": meta.run_id, "status": meta.status})
        if store.steering.resume(meta.run_id, pause.token if meta.status == "PAUSED" else None):
            break
        meta = store.require_run(meta.run_id)
        if meta.is_terminal:
            raise _ended(meta)
        pause = meta.pause
    else:
        raise NotPaused(f"run {meta.run_id} kept changing; try again", details={"run_id": meta.run_id})
    assert pause is not None  # the loop breaks only after a resume of a pause
    if pause.token is not None and meta.status == "PAUSED":
        try:
            services.executions.send_task_success(pause.token, {"resumed": True})
        except (TaskTokenGone, CallbackFailed) as failed:
            store.steering.undo_resume(meta.run_id, pause)
            if isinstance(failed, CallbackFailed):
                raise
            raise NotPaused(
                f"run {meta.run_id} stopped waiting before the resume reached it", details={"run_id": meta.run_id}
            ) from None
    metrics.add_metric(name="RunsResumed", unit="Count", value=1)
    logger.info("resumed", extra={"run_id": meta.run_id, "was_waiting": meta.status == "PAUSED"})
    return describe_run(services, owner=owner, run_reference=meta.run_id, trace=False)
