"""The payload passed between states of the state machine.

It carries ids and counters only, so its size does not grow with the conversation: message bodies,
arguments and observations live in the store. Every state handler validates its event against these
models; a malformed event is an `InvalidStateEvent` naming the field.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.errors import InvalidStateEvent

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"

ModelT = TypeVar("ModelT", bound=BaseModel)

NextStep = Literal["start", "continue", "final_round", "tool_calls", "final_answer", "parse_error", "limit_hit"]


class CallRef(BaseModel):
    """A pointer to one tool call of an iteration; its arguments are in the store."""

    model_config = ConfigDict(extra="forbid", strict=True)

    call_id: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=128)


class StatePayload(BaseModel):
    """What flows between IterationGuard, LLMCall, Parse, ToolInvoke and Format."""

    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=0, le=10_000)
    final_round: bool = False
    next: NextStep = "start"
    calls: list[CallRef] = Field(default_factory=list, max_length=64)


class ToolInvokeEvent(BaseModel):
    """One item of the ToolInvoke Map: the run, the iteration, and the call to make."""

    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=1, le=10_000)
    index: int = Field(ge=0, le=63)
    call: CallRef


class TaskFailure(BaseModel):
    """The error a Catch put at `$.error`: the error name and the cause Step Functions recorded."""

    model_config = ConfigDict(extra="ignore")

    Error: str = "States.TaskFailed"
    Cause: str | None = None


class FailureEvent(BaseModel):
    """The FormatFailure input: whatever the payload was when a task failed, plus the caught error.

    Only the run id is required: the failure may have been caused by a malformed payload, and it must
    still be recorded.
    """

    model_config = ConfigDict(extra="ignore")

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    error: TaskFailure


class ToolInvokeResult(BaseModel):
    """What one Map iteration returns: enough for the execution history, nothing that grows."""

    call_id: str
    ok: bool | None
    replayed: bool = False


class FormatResult(BaseModel):
    """The machine's final output."""

    run_id: str
    status: Literal["SUCCEEDED", "FAILED"]
    stop_reason: str | None = None


def parse_event(model: type[ModelT], event: Any) -> ModelT:
    """Validate a state event, raising `InvalidStateEvent` that names each bad field and why."""
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '<event>'}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidStateEvent(f"invalid {model.__name__} event: {problems}") from None
