"""Runs read as A2A tasks: their state, status message and artifacts."""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import get_artifact_text, get_data_parts, get_message_text
from a2a.types import TaskState

from stepwise.interop.a2a.tasks import task_of


def run(status: str, **fields: Any) -> dict[str, Any]:
    """A run's view as `GET /v1/runs/{run_id}` answers it."""
    return {"run_id": "run-1", "status": status, "profile": "default", "session_id": "s-1", **fields}


def test_each_run_status_is_the_task_state_the_brief_names() -> None:
    # When runs of every status are read as tasks
    states = {status: task_of(run(status)).status.state for status in ("QUEUED", "RUNNING", "SUCCEEDED", "FAILED")}
    states |= {status: task_of(run(status)).status.state for status in ("TIMED_OUT", "CANCELLED")}
    states |= {status: task_of(run(status)).status.state for status in ("WAITING_APPROVAL", "WAITING_BUDGET")}
    # Then working, completed, failed, canceled, and the two waits for a person
    assert states == {
        "QUEUED": TaskState.TASK_STATE_WORKING,
        "RUNNING": TaskState.TASK_STATE_WORKING,
        "SUCCEEDED": TaskState.TASK_STATE_COMPLETED,
        "FAILED": TaskState.TASK_STATE_FAILED,
        "TIMED_OUT": TaskState.TASK_STATE_FAILED,
        "CANCELLED": TaskState.TASK_STATE_CANCELED,
        "WAITING_APPROVAL": TaskState.TASK_STATE_AUTH_REQUIRED,
        "WAITING_BUDGET": TaskState.TASK_STATE_INPUT_REQUIRED,
    }


def test_a_run_with_structured_output_has_the_answer_and_a_data_artifact() -> None:
    # When a run that answered with structured output is read
    task = task_of(run("SUCCEEDED", answer="Paris, 14 °C", output={"city": "Paris", "celsius": 14}))
    # Then its context is its session, and its artifacts the answer's text and the output's data
    assert (task.id, task.context_id) == ("run-1", "s-1")
    assert get_artifact_text(task.artifacts[0]) == "Paris, 14 °C"
    assert get_data_parts(list(task.artifacts[1].parts)) == [{"city": "Paris", "celsius": 14.0}]


def test_a_run_waiting_for_approval_says_how_to_answer_it() -> None:
    # When a run waiting for approval is read
    task = task_of(run("WAITING_APPROVAL"))
    # Then its status message names the API route that answers it, and it has no artifact yet
    assert "/v1/runs/run-1/approvals/" in get_message_text(task.status.message)
    assert list(task.artifacts) == []


def test_a_failed_run_has_no_answer_artifact_and_says_why() -> None:
    # When a run a model error ended is read
    task = task_of(run("FAILED", stop_reason="model_error", error={"type": "ModelError", "message": "rate limited"}))
    # Then the status says why, and no artifact claims an answer
    assert get_message_text(task.status.message) == "failed (model_error): rate limited"
    assert list(task.artifacts) == []
