"""Side effects at most once: how ToolInvoke sends a tool call that may change something outside.

Every call carries an idempotency key derived from its place in the run (`stepwise.tools.idempotency`),
the same for every attempt. A call that changes nothing (a GET, a built-in) is simply sent: sending it
again after a crash does no harm. A call that may change something (`CallEffects.side_effects`) has its
start recorded first (`stepwise.store.tool_attempts`). A step that finds an earlier start and no
observation is a retry or a resume after the first attempt may have reached the receiver:

- the receiver honours idempotency keys: the call is sent again with the same key, and the receiver
  does its work once;
- otherwise it is not sent: the observation tells the model the outcome is unknown and to check before
  repeating it. A repeat is a new call, with a new key and, for a tool that requires approval, a new
  approval: an approval is never reused for a second attempt of a call the receiver cannot recognise.

`send` is how a call reaches its tool (the guarded invoker), so what decides whether a call goes out is
kept apart from how it is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stepwise.models.messages import ToolCall
from stepwise.store.tool_attempts import CallStart, ToolAttemptStore
from stepwise.store.views import RunRef
from stepwise.telemetry.observability import logger
from stepwise.tools.base import CallContext
from stepwise.tools.idempotency import CallEffects, idempotency_key
from stepwise.tools.observation import ToolObservation

UNKNOWN_OUTCOME = "outcome unknown: an earlier attempt was sent and its answer was never stored"

Send = Callable[[ToolCall, CallContext], ToolObservation]


@dataclass(frozen=True)
class SentCall:
    """What became of one call: its observation, its key, and the attempt it was (None for a call that
    changes nothing, whose attempts are not counted)."""

    observation: ToolObservation
    idempotency_key: str
    attempt: int | None


def send_at_most_once(
    run: RunRef,
    iteration: int,
    index: int,
    call: ToolCall,
    *,
    effects: CallEffects,
    attempts: ToolAttemptStore,
    send: Send,
) -> SentCall:
    """Send `call` unless an earlier attempt may have reached a receiver that cannot recognise a repeat."""
    key = idempotency_key(run.run_id, iteration, call.id)
    context = CallContext(idempotency_key=key)
    if not effects.side_effects:
        return SentCall(send(call, context), key, None)
    start = attempts.begin(run, iteration, index, call_id=call.id, tool=call.name, idempotency_key=key)
    if start.first:
        return SentCall(send(call, context), key, 1)
    if effects.key_honoured:
        attempt = attempts.again(run.run_id, iteration, index)
        logger.info(
            "tool call sent again with its idempotency key",
            extra={"run_id": run.run_id, "iteration": iteration, "tool": call.name, "attempt": attempt},
        )
        return SentCall(send(call, context), start.idempotency_key, attempt)
    logger.warning(
        "tool call not sent again: its outcome is unknown",
        extra={"run_id": run.run_id, "iteration": iteration, "tool": call.name},
    )
    return SentCall(unknown_outcome(call, start), start.idempotency_key, start.earlier_attempts)


def unknown_outcome(call: ToolCall, start: CallStart) -> ToolObservation:
    """The observation of a call that was sent once, whose answer was lost, and that is not sent again."""
    content = (
        f"Error: the outcome of this call to {call.name} is unknown. It was sent at {start.started_at}, and the "
        "run stopped before its answer was stored (a crash or a timeout), so it may or may not have taken "
        f"effect. It was not sent again: {call.name} cannot tell a repeated call from a new one. Check "
        "whether it took effect before calling it again; calling it again makes a new request (and, if the "
        "tool needs approval, asks for a new approval)."
    )
    return ToolObservation(
        call_id=call.id, name=call.name, ok=False, content=content, error=UNKNOWN_OUTCOME, latency_ms=0
    )
