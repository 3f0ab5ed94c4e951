"""Steering inside the loop: messages posted to the run reach its next model call; a paused run waits.

- **Messages.** LLMCall's conversation Query also returns the messages posted to the run that no model call
  has seen (`stepwise.store.steering`); before it calls the model, LLMCall moves each into the conversation
  after the previous iteration's messages, as a user message with a `message` trace step, so the request it
  sends carries them. None waiting costs nothing.
- **Pause.** Parse reads META every iteration; a pause asked there sets `context.pause`, and the next
  IterationGuard starts no iteration: `next: await_resume` sends the run to AwaitResume, a callback task of
  IterationGuard's own function, which stores the task token on META and marks the run PAUSED. The wait
  lasts until `POST /v1/runs/{id}/resume` answers the token, the run is cancelled (StopExecution), or its
  deadline (the task's timeout): then the run ends with its best answer, as at any deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepwise.errors import RunNotFound
from stepwise.models.run import StoredMessage
from stepwise.models.state import ContextState, PauseWaitEvent, RunContext
from stepwise.models.step_record import StepRecord
from stepwise.steps.runtime import StepRuntime
from stepwise.store.history import Conversation
from stepwise.store.keys import LAST_SLOT, STEER_FIRST_SLOT
from stepwise.telemetry.observability import logger, metrics

_TIMEOUT_ERRORS = ("States.Timeout", "States.HeartbeatTimeout")


class PauseSettled(Exception):
    """The pause was withdrawn (resumed) before the run began to wait: the iteration goes on (caught by the
    state machine into AwaitResume's result)."""


@dataclass(frozen=True)
class _Run:
    run_id: str
    expires_at: int


def deliver_posted(
    run_id: str, iteration: int, run: RunContext, conversation: Conversation, runtime: StepRuntime
) -> Conversation:
    """The conversation with the messages posted to the run moved into it, after iteration `iteration - 1`
    (what the model call of `iteration` sees first); a message another attempt moved is taken as moved."""
    if not conversation.posted:
        return conversation
    boundary = iteration - 1
    taken = [message.slot for message in conversation.messages if message.iteration == boundary]
    slot = max([STEER_FIRST_SLOT - 1, *(each for each in taken if each >= STEER_FIRST_SLOT)]) + 1
    moved: list[StoredMessage] = []
    for posted in conversation.posted:
        if slot > LAST_SLOT:
            logger.warning("too many messages at one iteration boundary", extra={"run_id": run_id})
            break
        step = StepRecord(
            iteration=boundary,
            kind="message",
            n=slot - STEER_FIRST_SLOT,
            call_id=posted.message_id,
            observation=posted.content,
            note=f"told by {posted.posted_by} at {posted.posted_at}",
        )
        if runtime.store.steering.deliver(_Run(run_id, run.expires_at), posted, boundary, slot, step):
            moved.append(StoredMessage(role="user", content=posted.content, iteration=boundary, slot=slot))
            slot += 1
    if moved:
        metrics.add_metric(name="MessagesDelivered", unit="Count", value=len(moved))
        logger.info("posted messages delivered", extra={"run_id": run_id, "count": len(moved)})
    # a message another attempt moved is read with the conversation next time; this call sees what it moved
    return Conversation([*conversation.messages, *moved], conversation.options, [])


def pause_seconds(run: RunContext, now: float) -> int:
    """How long a pause beginning `now` may wait: until the run's deadline (at least a second)."""
    return max(1, int(run.deadline - now))


def await_resume(event: PauseWaitEvent, runtime: StepRuntime) -> dict[str, Any]:
    """Store the wait's task token on META and mark the run PAUSED.

    `PauseSettled` (caught: the iteration goes on) when the pause was withdrawn first; `RunNotFound` (caught
    to FormatFailure, which finds the end recorded) when the run ended first.
    """
    timeout_at = runtime.clock() + event.seconds
    if not runtime.store.steering.begin_wait(event.run_id, event.iteration, event.task_token, timeout_at):
        meta = runtime.store.require_run(event.run_id)
        if meta.is_terminal:
            raise RunNotFound(f"run {event.run_id} ended before it could pause")
        raise PauseSettled(f"run {event.run_id} was resumed before it paused")
    metrics.add_metric(name="RunsPaused", unit="Count", value=1)
    logger.info("paused", extra={"run_id": event.run_id, "iteration": event.iteration})
    return {"paused": True}


def after_pause(run_id: str, outcome: Any, runtime: StepRuntime) -> bool:
    """Whether the run ends now (its deadline came while it waited) after a pause's wait ended with `outcome`:
    the resume's output, the timeout or `PauseSettled` the Catch put there, or a plain invocation's result
    (an Express workflow, which cannot wait: the pause is dropped and the run goes on)."""
    if isinstance(outcome, dict) and outcome.get("Error") in _TIMEOUT_ERRORS:
        runtime.store.steering.end_wait(run_id)
        logger.info("the pause lasted until the deadline: the run ends", extra={"run_id": run_id})
        return True
    if isinstance(outcome, dict) and "Payload" in outcome:
        runtime.store.steering.end_wait(run_id)
        logger.warning("an Express workflow cannot wait: the pause is dropped", extra={"run_id": run_id})
    return False


def cleared(context: ContextState) -> ContextState:
    """The payload's context without the pause (it was waited, withdrawn or dropped)."""
    return context.model_copy(update={"pause": False, "pause_seconds": None})
