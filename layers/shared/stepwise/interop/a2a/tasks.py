"""Runs as A2A tasks: a run's view (`GET /v1/runs/{id}`) becomes a task, its steps status updates.

A task is a run (task id = run id) and its context is the run's session (context id = session id), so
a task is whatever the store holds, read through the API, on whichever instance asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Struct

# A run waiting for a person to approve a tool call is waiting for an authorization, not for more of the
# question; a run waiting at its budget waits for the caller to say whether to spend more (its input); a paused
# run waits for the caller to resume it (its input too).
STATES: dict[str, TaskState] = {
    "QUEUED": TaskState.TASK_STATE_WORKING,
    "RUNNING": TaskState.TASK_STATE_WORKING,
    "WAITING_APPROVAL": TaskState.TASK_STATE_AUTH_REQUIRED,
    "WAITING_BUDGET": TaskState.TASK_STATE_INPUT_REQUIRED,
    "PAUSED": TaskState.TASK_STATE_INPUT_REQUIRED,
    "SUCCEEDED": TaskState.TASK_STATE_COMPLETED,
    "FAILED": TaskState.TASK_STATE_FAILED,
    "TIMED_OUT": TaskState.TASK_STATE_FAILED,
    "CANCELLED": TaskState.TASK_STATE_CANCELED,
}
ENDED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"})
# The states after which nothing more happens to a task (the spec's terminal states).
TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
WAITING = frozenset({"WAITING_APPROVAL", "WAITING_BUDGET", "PAUSED"})
# The states a blocking send returns at: the run ended, or waits for a person.
SETTLED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
ANSWER_ARTIFACT = "answer"
OUTPUT_ARTIFACT = "output"

_WAITING_TEXT = {
    "WAITING_APPROVAL": "A tool call waits for a person's approval: POST /v1/runs/{run_id}/approvals/{{call_id}} "
    "of the HTTP API (or the console) answers it.",
    "WAITING_BUDGET": "The run waits at its budget: POST /v1/runs/{run_id}/budget of the HTTP API raises it or "
    "ends the run.",
    "PAUSED": "The run was paused: POST /v1/runs/{run_id}/resume of the HTTP API (or the console) resumes it.",
}


def task_of(run: Mapping[str, Any]) -> Task:
    """The task a run's view stands for, its artifacts once it ended."""
    return Task(
        id=run["run_id"],
        context_id=context_of(run),
        status=status_of(run),
        artifacts=artifacts_of(run),
        metadata=_struct(run_facts(run)),
    )


def settled(task: Task) -> bool:
    """True once the task's run ended or waits for a person."""
    return task.status.state in SETTLED


def context_of(run: Mapping[str, Any]) -> str:
    """The task's context: the run's session, else (a run started without one) the run itself."""
    return str(run.get("session_id") or run["run_id"])


def status_of(run: Mapping[str, Any]) -> TaskStatus:
    """The task's status: the run's, with the answer, the error or what the run waits for as its message."""
    status = run["status"]
    text = _status_text(run)
    message = _agent_message(run, f"{run['run_id']}-{status.lower()}", text) if text else None
    updated = run.get("updated_at")
    timestamp = datetime.fromisoformat(updated) if updated else None
    return TaskStatus(state=STATES[status], message=message, timestamp=timestamp)


def artifacts_of(run: Mapping[str, Any]) -> list[Artifact]:
    """The answer (a text part) and, when the run was asked for one, the structured output (a data part)."""
    if run["status"] not in ENDED:
        return []
    artifacts = []
    if run.get("answer") and run["status"] == "SUCCEEDED":
        artifacts.append(
            Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT, parts=[new_text_part(run["answer"])])
        )
    if run.get("output") is not None:
        part = new_data_part(run["output"], media_type="application/json")
        artifacts.append(Artifact(artifact_id=OUTPUT_ARTIFACT, name=OUTPUT_ARTIFACT, parts=[part]))
    return artifacts


def run_facts(run: Mapping[str, Any]) -> dict[str, Any]:
    """What the task's metadata carries of the run: its own status words, for a client that knows Stepwise."""
    keys = ("status", "profile", "stop_reason", "outcome", "iterations")
    return {"stepwise": {key: run[key] for key in keys if run.get(key) is not None}}


def step_update(run_id: str, context_id: str, step: Mapping[str, Any], index: int) -> TaskStatusUpdateEvent:
    """A step the run stored, as a `working` status update whose message says what happened."""
    message = _agent_message({"run_id": run_id, "session_id": context_id}, f"{run_id}-step-{index}", step_text(step))
    return TaskStatusUpdateEvent(
        task_id=run_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING, message=message),
        metadata=_struct({"stepwise_step": dict(step)}),
    )


def step_text(step: Mapping[str, Any]) -> str:
    """One line saying what a step of the run was."""
    prefix = f"iteration {step.get('iteration')}: "
    kind = step.get("kind")
    if kind == "tool":
        return f"{prefix}called the tool {step.get('tool')}"
    if kind == "parse":
        calls = [str(call.get("tool") or call.get("name")) for call in step.get("calls") or []]
        return f"{prefix}decided to call {', '.join(calls)}" if calls else f"{prefix}decided to answer"
    if kind == "llm":
        return f"{prefix}asked the model"
    return f"{prefix}{kind}"


def artifact_updates(task: Task) -> list[TaskArtifactUpdateEvent]:
    """The task's artifacts, each as one whole update."""
    return [
        TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id, artifact=artifact, last_chunk=True)
        for artifact in task.artifacts
    ]


def status_update(task: Task) -> TaskStatusUpdateEvent:
    """The task's current status as an update (the last one a stream sends)."""
    return TaskStatusUpdateEvent(
        task_id=task.id, context_id=task.context_id, status=task.status, metadata=task.metadata
    )


def _status_text(run: Mapping[str, Any]) -> str | None:
    status = run["status"]
    if status in WAITING:
        return _WAITING_TEXT[status].format(run_id=run["run_id"])
    if status == "SUCCEEDED":
        return run.get("answer") or None
    if status in ENDED:
        error = run.get("error") or {}
        said = run.get("answer") or error.get("message") or error.get("type")
        return f"{status.lower()} ({run.get('stop_reason') or 'no answer'}){': ' + said if said else ''}"
    return None


def _agent_message(run: Mapping[str, Any], message_id: str, text: str) -> Message:
    return Message(
        message_id=message_id,
        context_id=context_of(run),
        task_id=run["run_id"],
        role=Role.ROLE_AGENT,
        parts=[new_text_part(text)],
    )


def _struct(document: dict[str, Any]) -> Struct:
    return ParseDict(document, Struct())
