"""What `stepwise eval --against` accepts from the server it is pointed at, checked before any of it is used.

The server is not trusted. A successful answer must be what the API's own response models describe
(`stepwise.models.api_responses`), with every run id held to the API's run-id pattern, since a run id
is the one value of an answer that goes into a later URL. Anything else is a `BadServer`: one line
naming the request, the status and what was wrong, and exit status 2. Whatever of the server's text is
shown is cut short and has its control characters escaped, so it stays one line and cannot drive the
terminal.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from stepwise.errors import UsageError
from stepwise.models.api_requests import RUN_ID_PATTERN
from stepwise.models.api_responses import ErrorResponse, ReplayAccepted, RunAccepted, RunView

RunId = Annotated[str, Field(pattern=RUN_ID_PATTERN)]
SHOWN_CHARS = 120

Answer = TypeVar("Answer", bound=BaseModel)


class BadServer(UsageError):
    """The server answered what no Stepwise API answers; the eval stops (exit 2)."""


class StartedRun(RunAccepted):
    """`POST /v1/runs` as the eval reads it: a run id it may put in the next URL."""

    run_id: RunId


class StartedReplay(ReplayAccepted):
    """`POST /v1/runs/{run_id}/replay` as the eval reads it."""

    run_id: RunId
    original_run_id: RunId


class RunAnswer(RunView):
    """`GET /v1/runs/{run_id}` as the eval reads it."""

    run_id: RunId


def parsed_answer(model: type[Answer], body: bytes, *, what: str) -> Answer:
    """``body`` read as ``model``; `BadServer` naming ``what`` (the request and status), the field and why."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise BadServer(f"{what}: {_first_problem(exc)}") from None


def error_message(body: bytes) -> str:
    """What an error answer says: the API's `error.message`, API Gateway's `message`, or the start of its text.

    Error answers are read leniently: API Gateway answers its own (a throttled request, a function that
    timed out) in a shape of its own.
    """
    try:
        return shown(ErrorResponse.model_validate_json(body).error.message)
    except ValidationError:
        pass
    try:
        gateway = _GatewayError.model_validate_json(body)
    except ValidationError:
        return shown(body.decode("utf-8", errors="replace"))
    return shown(gateway.message)


class _GatewayError(BaseModel):
    message: str


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """The start of a server's text, fit for one line: control and format characters escaped."""
    cut = text[:limit]
    escaped = "".join(character if character.isprintable() else repr(character)[1:-1] for character in cut)
    return escaped + ("…" if len(text) > limit else "")


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    kind, value = first["type"], first.get("input")
    if kind == "json_invalid":
        return f"the body is not JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
    if not first["loc"] and kind in ("model_type", "dict_type"):
        return f"the body is {_json_kind(value)}, not a JSON object"
    field = ".".join(str(part) for part in first["loc"])
    got = f" (got {shown(repr(value), 60)})" if isinstance(value, str | int | float | bool) else ""
    return f"{field}: {first['msg']}{got}{more}"


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str):
        return "a JSON string"
    if value is None:
        return "JSON null"
    return "a JSON number or boolean" if isinstance(value, int | float | bool) else "not an object"
