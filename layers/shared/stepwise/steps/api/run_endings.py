"""How a chat completion says the way its run ended: `stepwise` on an answer, or an HTTP error without one.

A run that answered (`answered`) or gave its best answer after a limit or a model error (`partial`, which
the completion's `finish_reason: length` marks) is a completion carrying `{"outcome", "stop_reason"}`. A
run without an answer (`none`: FAILED, TIMED_OUT, CANCELLED) is never one: it is the provider's 429 passed
through when the provider's rate limit ended it (its `Retry-After` with it), 400 `guardrail_blocked` with the
profile's message when a guardrail blocked its input, else 502 naming the error.
"""

from __future__ import annotations

import math
from http import HTTPStatus

from stepwise.models.chat_api import RunEnding
from stepwise.models.run import RunMeta
from stepwise.steps.api.problems import ApiError, GuardrailBlocked, ProviderRateLimited, RunFailed
from stepwise.steps.outcome import run_outcome


def run_ending(meta: RunMeta) -> RunEnding:
    """The `stepwise` field of the ended run `meta`'s completion; raises the error a completion answers
    instead when the run has no answer."""
    outcome = run_outcome(meta)
    if meta.status != "SUCCEEDED" or outcome is None or outcome == "none":
        raise _no_answer(meta)
    return RunEnding(outcome=outcome, stop_reason=meta.stop_reason)


def _no_answer(meta: RunMeta) -> ApiError:
    error = meta.error
    details = {
        "run_id": meta.run_id,
        "status": meta.status,
        "stop_reason": meta.stop_reason,
        "outcome": "none",
        "error": error.model_dump(exclude_none=True) if error else None,
    }
    if meta.stop_reason == "guardrail":
        return GuardrailBlocked(meta.answer or "the input was blocked by a guardrail", details=details)
    cause = f": {error.type}: {error.message}" if error else ""
    message = f"the run ended {meta.status} without an answer{cause}"
    if error is not None and error.provider_status == HTTPStatus.TOO_MANY_REQUESTS:
        wait = error.retry_after_seconds
        seconds = None if wait is None else math.ceil(wait)
        return ProviderRateLimited(message, details=details, retry_after_seconds=seconds)
    return RunFailed(message, details=details)
