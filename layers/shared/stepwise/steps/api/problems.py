"""The errors the API answers with, as exceptions its logic raises: each has its HTTP status and `type`.

Kept apart from `errors` (which turns exceptions into Powertools responses) so that what raises them, the
streaming function's routes above all, does not load Powertools' event handler to do so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from stepwise.inputs.display_text import visible
from stepwise.inputs.text_policy import clean_text

_MAX_PROBLEMS_IN_MESSAGE = 3
# A caller's unknown query parameters are named back to it: enough of each name and of the list to spot a
# misspelling, never as much as it sent (a URL may carry thousands of names, each thousands of characters).
_MAX_QUERY_NAME_CHARS = 64
_MAX_UNKNOWN_QUERY_NAMES = 10


class ApiError(Exception):
    """An error with its HTTP status, stable `type` and details; raise it anywhere in the API logic."""

    status = 500
    type = "internal_error"
    # True when the request started work that goes on: resending it would start that work again (a new
    # run), so the answer tells clients that retry 5xx answers on their own (the openai SDK) not to.
    resend_starts_again = False
    # True when the answer is about what the store holds, which the same request sent again meets again (a
    # 409 conflict): clients that retry a 409 on their own (the openai SDK reads one as a lock timeout) are
    # told not to.
    resend_meets_it_again = False
    # Seconds a client should wait before sending the same request again (`Retry-After`), when it should.
    retry_after_seconds: int | None = None

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class InvalidJson(ApiError):
    """The body is not a JSON document."""

    status = 400
    type = "invalid_json"


class Unauthorized(ApiError):
    """No caller identity in the request context."""

    status = 401
    type = "unauthorized"


class InvalidIdentity(ApiError):
    """The caller's key or identity cannot name an owner (too long, or characters no key has); the header named."""

    status = 400
    type = "invalid_identity"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}", details={"errors": [{"field": field, "reason": reason}]})


class NotFound(ApiError):
    """No such route, or no run with that id that the caller may see."""

    status = 404
    type = "not_found"


class IdempotencyConflict(ApiError):
    """An Idempotency-Key already used with another body."""

    status = 409
    type = "idempotency_conflict"
    resend_meets_it_again = True


class IdempotencyInProgress(ApiError):
    """An Idempotency-Key whose first request is still being handled."""

    status = 409
    type = "idempotency_in_progress"
    retry_after_seconds = 1


class RunEnded(ApiError):
    """The run cannot be cancelled: it had already ended."""

    status = 409
    type = "run_ended"
    resend_meets_it_again = True


class ApprovalNotPending(ApiError):
    """The tool call is not waiting for approval: answered already, or its wait ended."""

    status = 409
    type = "approval_not_pending"
    resend_meets_it_again = True


class ApprovalStale(ApiError):
    """The answer names other arguments (`arguments_sha256`) than those of the call waiting now."""

    status = 409
    type = "approval_stale"
    resend_meets_it_again = True


class NotWaitingBudget(ApiError):
    """The run is not waiting at its budget: it runs, waits for something else, or was answered already."""

    status = 409
    type = "not_waiting_budget"
    resend_meets_it_again = True


class CannotPause(ApiError):
    """The run cannot pause: it runs on an Express workflow, which cannot wait for a callback."""

    status = 409
    type = "cannot_pause"
    resend_meets_it_again = True


class NotPaused(ApiError):
    """The run is not paused, nor asked to pause: there is nothing to resume."""

    status = 409
    type = "not_paused"
    resend_meets_it_again = True


class PayloadTooLarge(ApiError):
    """The body is over the configured limit."""

    status = 413
    type = "payload_too_large"


class UnsupportedMediaType(ApiError):
    """The body was not sent as JSON."""

    status = 415
    type = "unsupported_media_type"

    def __init__(self, content_type: str) -> None:
        super().__init__(f"send the body as JSON with Content-Type: application/json, not {content_type}")


class InvalidRequest(ApiError):
    """The request is JSON but not a valid request; `problems` are (field, reason) pairs."""

    status = 422
    type = "invalid_request"

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        shown = "; ".join(f"{field}: {reason}" for field, reason in problems[:_MAX_PROBLEMS_IN_MESSAGE])
        more = len(problems) - _MAX_PROBLEMS_IN_MESSAGE
        message = f"invalid request: {shown}" + (f" (and {more} more)" if more > 0 else "")
        errors = [{"field": field, "reason": reason} for field, reason in problems]
        super().__init__(message, details={"errors": errors})

    @classmethod
    def of(cls, field: str, reason: str) -> InvalidRequest:
        """One problem with one field."""
        return cls([(field, reason)])

    @classmethod
    def of_query(
        cls, given: Mapping[str, Sequence[str]], known: Collection[str], single: Collection[str] = ()
    ) -> InvalidRequest | None:
        """The 422 naming each query parameter of `given` (each name's values) that is not one of `known` (the
        route's, saying what it takes), and each of `single` given more than once; None when all is well."""
        unknown = sorted(set(given) - set(known))
        takes = f"this route takes {', '.join(sorted(known))}"
        problems = [
            (f"{_shown_name(name)} (query parameter)", f"not a parameter: {takes}")
            for name in unknown[:_MAX_UNKNOWN_QUERY_NAMES]
        ]
        if len(unknown) > _MAX_UNKNOWN_QUERY_NAMES:
            more = len(unknown) - _MAX_UNKNOWN_QUERY_NAMES
            problems.append(("query parameters", f"{more} more names that are not parameters: {takes}"))
        problems += [
            (f"{name} (query parameter)", f"given {len(given[name])} times: it takes one value")
            for name in sorted(single)
            if len(given.get(name) or ()) > 1
        ]
        return cls(problems) if problems else None


def _shown_name(name: str) -> str:
    """A query parameter's name as an error shows it: storable, cut to its start when long, and with each invisible
    or reordering character (a bidi override, an escape sequence) written as its escape, since a person reads it."""
    if len(name) <= _MAX_QUERY_NAME_CHARS:
        return visible(clean_text(name))
    return f"{visible(clean_text(name[:_MAX_QUERY_NAME_CHARS]))}… ({len(name)} characters)"


class RunFailed(ApiError):
    """A run awaited synchronously ended without an answer."""

    status = 502
    type = "run_failed"
    resend_starts_again = True


class GuardrailBlocked(ApiError):
    """A run awaited synchronously whose input a guardrail of its profile blocked: the message is the
    profile's `guardrails.message`, and sending the same input again is blocked again."""

    status = 400
    type = "guardrail_blocked"


class ProviderRateLimited(ApiError):
    """A run awaited synchronously ended without an answer because its model provider answered 429 (rate
    limited) until the run gave up: passed through, with the provider's `Retry-After` when it sent one.

    A resend starts a new run, which is what a rate-limited client means to do once it has waited."""

    status = 429
    type = "rate_limit_exceeded"

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, retry_after_seconds: int | None = None
    ) -> None:
        super().__init__(message, details=details)
        self.retry_after_seconds = retry_after_seconds


class Unavailable(ApiError):
    """A service the API depends on could not take the request."""

    status = 503
    type = "unavailable"
    retry_after_seconds = 1


class GatewayTimeout(ApiError):
    """A run awaited synchronously is still going; the caller can poll it."""

    status = 504
    type = "timeout"
    resend_starts_again = True
