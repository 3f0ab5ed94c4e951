"""The ends of Express executions, read from the state machine's own log.

Express workflows send no "Step Functions Execution Status Change" events to EventBridge: what an Express
execution did is only in the log the state machine writes (level ERROR keeps ExecutionFailed,
ExecutionTimedOut and ExecutionAborted). A subscription filter of the template sends those records to
ExecutionEnded, which CloudWatch Logs invokes with `{"awslogs": {"data": <base64 of gzipped JSON>}}`. Each
record becomes the fields of an EventBridge status change's `detail`, so both paths record a run the same way.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from stepwise.errors import InvalidStateEvent

# The execution history event types that end an execution, and the status each ends it with.
ENDING_EVENTS: dict[str, str] = {
    "ExecutionFailed": "FAILED",
    "ExecutionTimedOut": "TIMED_OUT",
    "ExecutionAborted": "ABORTED",
}


class _Data(BaseModel):
    data: str


class LogsSubscriptionEvent(BaseModel):
    """What CloudWatch Logs sends a subscribed Lambda function."""

    awslogs: _Data


class _LoggedEvent(BaseModel):
    """One record of the state machine's log: an execution history event (the fields this step reads)."""

    model_config = ConfigDict(extra="ignore")

    type: str
    execution_arn: str
    details: dict[str, Any] | None = None


def is_logs_subscription(event: Any) -> bool:
    """True when `event` is CloudWatch Logs' delivery to a subscribed function."""
    return isinstance(event, dict) and "awslogs" in event


def execution_ends(event: Any) -> list[dict[str, Any]]:
    """The execution ends the delivery holds, in its order, each as the `detail` of the status change
    EventBridge would have sent (`executionArn`, `name`, `status`, `error`, `cause`); records of other event
    types are skipped.

    `InvalidStateEvent` when the delivery cannot be decoded; a record that is not an execution history event
    (a line some other writer put in the group) is skipped.
    """
    try:
        data = LogsSubscriptionEvent.model_validate(event).awslogs.data
        payload = json.loads(gzip.decompress(base64.b64decode(data, validate=True)))
    except (ValidationError, binascii.Error, OSError, EOFError, ValueError) as exc:
        raise InvalidStateEvent(f"invalid CloudWatch Logs delivery: awslogs.data: {exc}") from None
    ends: list[dict[str, Any]] = []
    for record in payload.get("logEvents", []) if isinstance(payload, dict) else []:
        try:
            logged = _LoggedEvent.model_validate_json(record.get("message", ""))
        except (ValidationError, AttributeError):
            continue
        status = ENDING_EVENTS.get(logged.type)
        if status is None:
            continue
        details = logged.details or {}
        # arn:aws:states:<region>:<account>:express:<machine>:<name>:<id> (":execution:" for Standard)
        parts = logged.execution_arn.split(":")
        name = parts[7] if len(parts) > 7 else ""
        ends.append(
            {
                "executionArn": logged.execution_arn,
                "name": name,
                "status": status,
                "error": details.get("error"),
                "cause": details.get("cause"),
            }
        )
    return ends
