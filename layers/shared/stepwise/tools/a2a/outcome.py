"""What a remote agent answered, validated at the boundary and turned into an observation.

The SDK hands back protobuf messages (a `Task`, or a `Message` when the agent answers at once); they are read
as JSON (`MessageToDict`) into the pydantic models here, which keep only what an observation needs and name
the field of whatever does not fit. A task that completed gives its artifacts: text parts as they are, data
parts as compact JSON (keys sorted), files described in one line (never fetched). A task that failed, was rejected or
canceled, or waits for input or authentication gives a failed observation saying so, with the agent's own
words when its status carries a message.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.errors import ToolError
from stepwise.tools.base import ToolResult

_REMOTE = ConfigDict(extra="ignore", populate_by_name=True, hide_input_in_errors=True, frozen=True)

COMPLETED = "completed"
FAILED_STATES = frozenset({"failed", "rejected", "canceled"})
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})
FINAL_STATES = FAILED_STATES | INTERRUPTED_STATES | {COMPLETED}


class RemotePart(BaseModel):
    """One part of a message or an artifact: text, structured data, or a file (inline bytes or a URL)."""

    model_config = _REMOTE

    text: str | None = None
    data: Any = None
    url: str | None = None
    raw: str | None = None
    filename: str | None = None
    media_type: str | None = Field(default=None, alias="mediaType")

    def rendered(self) -> str:
        """The part as observation text."""
        if self.text is not None:
            return self.text
        if "data" in self.model_fields_set:
            # Sorted: a protobuf Struct keeps no order, and one answer should always read the same.
            return json.dumps(_whole_numbers(self.data), separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        kind = self.media_type or "unknown type"
        if self.url is not None:
            return f"[file {self.filename or self.url} ({kind}) at {self.url}, not fetched]"
        if self.raw is not None:
            return f"[file {self.filename or 'without a name'} ({kind}), not shown]"
        return "[an empty part]"


class RemoteMessage(BaseModel):
    """A message of the agent: its parts."""

    model_config = _REMOTE

    role: str = ""
    parts: list[RemotePart] = Field(default_factory=list)

    def text(self) -> str:
        """Every part, one after another."""
        return "\n".join(part.rendered() for part in self.parts)


class RemoteArtifact(BaseModel):
    """An output of a task."""

    model_config = _REMOTE

    name: str = ""
    parts: list[RemotePart] = Field(default_factory=list)


class RemoteStatus(BaseModel):
    """Where a task stands, with the agent's message about it, if any."""

    model_config = _REMOTE

    state: str = Field(min_length=1)
    message: RemoteMessage | None = None

    @property
    def name(self) -> str:
        """The state as the protocol's documents spell it: ``TASK_STATE_INPUT_REQUIRED`` is ``input-required``."""
        return self.state.removeprefix("TASK_STATE_").lower().replace("_", "-")


class RemoteTask(BaseModel):
    """A task of the remote agent: its id, status and artifacts (and history, for an answer given there)."""

    model_config = _REMOTE

    id: str = Field(min_length=1)
    status: RemoteStatus
    artifacts: list[RemoteArtifact] = Field(default_factory=list)
    history: list[RemoteMessage] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Whether the task will change no more without us: completed, failed, or waiting for us."""
        return self.status.name in FINAL_STATES


def read_remote(model: type[BaseModel], data: dict[str, Any], *, what: str) -> Any:
    """``data`` (a protobuf message as JSON) as ``model``; `ToolError` naming the field when it does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ToolError(f"the A2A agent answered with a malformed {what}: {where}: {first['msg']}") from None


def task_result(task: RemoteTask, *, agent: str) -> ToolResult:
    """The observation of a finished task: its artifacts when it completed, else what stopped it."""
    state = task.status.name
    said = task.status.message.text() if task.status.message is not None and task.status.message.parts else ""
    if state == COMPLETED:
        return ToolResult(content=_answer(task, said) or f"(the agent {agent} completed its task with no output)")
    detail = f"; it said: {said}" if said else ""
    if state == "input-required":
        content = (
            f"the agent {agent} needs more input to go on (task {task.id}){detail}\nCall it again with a message "
            "that holds everything it asked for."
        )
        return ToolResult(content=content, ok=False, error=f"the agent {agent} asked for more input")
    if state == "auth-required":
        content = f"the agent {agent} asks for authentication, which this tool cannot give (task {task.id}){detail}"
        return ToolResult(content=content, ok=False, error=f"the agent {agent} asked for authentication")
    content = f"the agent {agent}'s task {task.id} ended {state}{detail}"
    return ToolResult(content=content, ok=False, error=f"the agent {agent}'s task ended {state}")


def message_result(message: RemoteMessage, *, agent: str) -> ToolResult:
    """The observation of an agent that answered with a message instead of a task."""
    return ToolResult(content=message.text() or f"(the agent {agent} answered with an empty message)")


def _answer(task: RemoteTask, said: str) -> str:
    """The artifacts' text; else the status message; else the agent's last message in the history."""
    artifacts = ["\n".join(part.rendered() for part in artifact.parts) for artifact in task.artifacts]
    text = "\n\n".join(each for each in artifacts if each)
    if text:
        return text
    if said:
        return said
    replies = [message for message in task.history if message.role == "ROLE_AGENT" and message.parts]
    return replies[-1].text() if replies else ""


def _whole_numbers(value: Any) -> Any:
    """JSON from protobuf's `Value`, whose numbers are all doubles, with whole numbers written as integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers(each) for each in value]
    if isinstance(value, dict):
        return {key: _whole_numbers(each) for key, each in value.items()}
    return value
