"""Every error the API answers with (raised as the exceptions of `problems`), and the one place where
exceptions become HTTP responses.

Status codes, consistently:

- 400 `invalid_json`: the body is not JSON.
- 401 `unauthorized`: the request carries no caller identity (API key id or IAM principal).
- 404 `not_found`: no such route, or no run with that id visible to the caller.
- 409 `idempotency_conflict` / `idempotency_in_progress`: an `Idempotency-Key` reused with another
  body, or while its first request is still being handled.
- 409 `run_ended`: a run asked to be cancelled (or a call of it approved) had already ended.
- 409 `approval_not_pending`: a tool call asked to be approved or denied is not waiting for it (already
  answered, or its wait timed out).
- 409 `approval_stale`: an answer's `arguments_sha256` is not the hash of the arguments of the call waiting
  for it (the approver saw other arguments); `details.arguments_sha256` is the current one.
- 413 `payload_too_large`: the body is over `api.max_body_bytes`.
- 415 `unsupported_media_type`: a body that is not sent as `application/json`.
- 422 `invalid_request`: JSON that does not validate: wrong types, unknown fields, empty input, too
  many messages, input too long, unknown profile, malformed run id or header.
- 429 `rate_limit_exceeded`: a synchronous run (chat completions) ended without an answer because its
  model provider answered 429 until the run gave up; `Retry-After` is the provider's, when it sent one.
- 502 `run_failed`: a synchronous run (chat completions) ended FAILED, TIMED_OUT or CANCELLED without an
  answer; the message names the error that ended it.
- 503 `unavailable`: Step Functions or DynamoDB could not take the request; retry later.
- 504 `timeout`: a synchronous run did not finish in time; `details.run_id` says what to poll.
  502 and 504 carry `x-should-retry: false`: resending would start another run, and the openai SDK
  (which retries 5xx answers twice by default) obeys that header. So do the 409s but
  `idempotency_in_progress` (which says when to try again, `Retry-After`): the SDK retries a 409 as a lock
  timeout, and the same request sent again meets the same stored state.
- 500 `internal_error`: a bug; logged with its traceback.

Messages never quote the caller's input: pydantic's `input` is dropped from validation details.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from stepwise.errors import StoreTransientError
from stepwise.inputs.validation_problems import reason_of
from stepwise.models.api_responses import ErrorBody, ErrorResponse
from stepwise.steps.api.problems import (
    ApiError,
    ApprovalNotPending,
    ApprovalStale,
    GatewayTimeout,
    IdempotencyConflict,
    IdempotencyInProgress,
    InvalidJson,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RunEnded,
    RunFailed,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from stepwise.steps.executions import CallbackFailed, ExecutionStartFailed
from stepwise.telemetry.observability import logger

__all__ = [
    "ApiError",
    "ApprovalNotPending",
    "ApprovalStale",
    "GatewayTimeout",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "InvalidJson",
    "InvalidRequest",
    "NotFound",
    "PayloadTooLarge",
    "RunEnded",
    "RunFailed",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "as_api_error",
    "error_response",
    "is_json_content_type",
    "register_error_handlers",
]

# Where a request parameter came from, as Powertools' validation names it; body fields need no prefix.
_PARAMETER_SOURCES = {"query": "query parameter", "header": "header", "path": "path parameter"}


def _field_name(location: Sequence[Any]) -> str:
    parts = [str(part) for part in location]
    if parts and parts[0] == "body":
        return ".".join(parts[1:]) or "body"
    if parts and parts[0] in _PARAMETER_SOURCES:
        return f"{'.'.join(parts[1:])} ({_PARAMETER_SOURCES[parts[0]]})"
    return ".".join(parts) or "request"


def is_json_content_type(content_type: str) -> bool:
    """True for `application/json` (with parameters) and for no content type, which API clients often omit."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type in ("", "application/json")


def _validation_reason(error: Mapping[str, Any]) -> str:
    """Why a value was refused; a query parameter of one value given several times is said so (Powertools
    passes a repeated one as the list of its values, which the parameter's type then refuses)."""
    given = error.get("input")
    location = error.get("loc", ())
    if location and location[0] == "query" and isinstance(given, list) and len(given) > 1:
        return f"given {len(given)} times: it takes one value"
    return reason_of(error)


def _from_validation(exc: RequestValidationError) -> ApiError:
    errors = list(exc.errors())
    if any(error.get("type") == "json_invalid" for error in errors):
        return InvalidJson("the body is not valid JSON")
    return InvalidRequest([(_field_name(error.get("loc", ())), _validation_reason(error)) for error in errors])


def as_api_error(exc: Exception, *, content_type: str = "") -> ApiError:
    """The `ApiError` an exception is answered with; anything unexpected is a logged 500."""
    if isinstance(exc, ApiError):
        return exc
    body_errors = (RequestValidationError, RequestUnsupportedContentType, ValueError)
    if isinstance(exc, body_errors) and not is_json_content_type(content_type):
        # Powertools parses form and multipart bodies itself; their errors would only confuse a JSON client.
        return UnsupportedMediaType(content_type)
    if isinstance(exc, UnicodeDecodeError):
        # Powertools decodes a binary (base64) body as UTF-8 before any validation runs.
        return InvalidJson("the body is not UTF-8 encoded JSON")
    if isinstance(exc, RequestValidationError):
        return _from_validation(exc)
    if isinstance(exc, StoreTransientError):
        return Unavailable("the run store is busy or unreachable; retry")
    if isinstance(exc, ExecutionStartFailed):
        return Unavailable("the run could not be started; retry")
    if isinstance(exc, CallbackFailed):
        return Unavailable("the answer could not be given to Step Functions; retry")
    if isinstance(exc, NotFoundError):
        return NotFound("no such route")
    logger.exception("unexpected error", extra={"error_type": type(exc).__name__})
    return ApiError("internal error")


# The header OpenAI's SDKs obey over their own retry rules (openai `_base_client._should_retry`).
_NO_RETRY_HEADERS = {"x-should-retry": "false"}


def error_response(error: ApiError) -> Response[dict[str, Any]]:
    """The HTTP response of an `ApiError`; one a resend would start again, or meet again, says not to retry
    it, one worth retrying says when (`Retry-After`)."""
    body = ErrorResponse(error=ErrorBody(type=error.type, message=error.message, details=error.details))
    headers = dict(_NO_RETRY_HEADERS) if error.resend_starts_again or error.resend_meets_it_again else {}
    if error.retry_after_seconds is not None:
        headers["Retry-After"] = str(error.retry_after_seconds)
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump(),
        headers=headers or None,
    )


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    """Answer every exception raised while handling a request with the `{"error": ...}` shape."""

    @app.exception_handler(Exception)
    def handle(exc: Exception) -> Response[dict[str, Any]]:
        content_type = app.current_event.headers.get("content-type") or ""
        error = as_api_error(exc, content_type=content_type)
        if error.status >= 500:
            logger.warning("request failed", extra={"error_type": error.type, "status": error.status})
        return error_response(error)
