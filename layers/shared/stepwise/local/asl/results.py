"""What an execution reports: its events as they happen, and its result."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel


class StateEvent(BaseModel):
    """One step of an execution's history, given to the listener as it happens.

    `input` is the state's input, on every event; `output` is set on `exited`; `error` and `cause` on
    `retry`, `caught` and `failed`. `map_index` is the item index for states run inside a Map
    iteration.
    """

    type: Literal["entered", "exited", "retry", "caught", "failed"]
    state: str
    timestamp: datetime
    input: Any = None
    output: Any = None
    error: str | None = None
    cause: str | None = None
    map_index: int | None = None


class ExecutionResult(BaseModel):
    """How an execution ended: its output when it succeeded, its error and cause otherwise."""

    execution_arn: str
    name: str
    status: Literal["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]
    output: Any  # None unless SUCCEEDED
    error: str | None
    cause: str | None
    started_at: datetime
    stopped_at: datetime
    history: list[StateEvent]
