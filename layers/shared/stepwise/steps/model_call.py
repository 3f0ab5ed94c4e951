"""One model call bounded by the run's deadline, retried in the step only where the state machine cannot.

The state machine retries `LLMTransientError` with waits of up to `STATE_MACHINE_MAX_RETRY_WAIT_SECONDS`,
but its Retry cannot see the run's deadline (it is in the payload). So the step decides: while the
deadline is further away than the longest wait, a transient failure goes to the state machine as before;
nearer, the step retries by itself with short waits, each call's timeout cut to the time left, and
raises `LLMDeadlineReached` (not retried: the run ends with its best answer) once no attempt fits. A run
therefore ends within its deadline plus `DEADLINE_GRACE_SECONDS`, never minutes past it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stepwise.errors import LLMDeadlineReached, LLMTransientError
from stepwise.models.messages import ChatRequest, Completion

if TYPE_CHECKING:
    from stepwise.llm.base import ChatModel

# The longest wait of the state machine's LLMTransientError Retry (its MaxDelaySeconds).
STATE_MACHINE_MAX_RETRY_WAIT_SECONDS = 60.0
# The least time worth a model call, and what a call past the deadline (the final round) may still take:
# the first retry interval of the state machine's Retry.
DEADLINE_GRACE_SECONDS = 2.0
_FIRST_BACKOFF_SECONDS = 0.5


def call_within_deadline(
    model: ChatModel,
    request: ChatRequest,
    *,
    deadline: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Completion:
    """`model.complete(request)` with its timeout cut to the time left before `deadline` (at least the grace).

    Raises `LLMTransientError` for the state machine to retry while there is time for its longest wait,
    `LLMDeadlineReached` when a transient failure leaves no time for another attempt; permanent errors
    pass through.
    """
    backoff = _FIRST_BACKOFF_SECONDS
    while True:
        timeout = max(deadline - clock(), DEADLINE_GRACE_SECONDS)
        try:
            return model.complete(request.model_copy(update={"timeout_seconds": timeout}))
        except LLMTransientError as exc:
            remaining = deadline - clock()
            if remaining > STATE_MACHINE_MAX_RETRY_WAIT_SECONDS + DEADLINE_GRACE_SECONDS:
                raise
            if remaining < backoff + DEADLINE_GRACE_SECONDS:
                raise LLMDeadlineReached(f"{exc} (no time left before the run's deadline to try again)") from exc
            sleep(backoff)
            backoff *= 2
