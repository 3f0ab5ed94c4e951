"""Calls waiting for approval as the API shows them: in a run's `pending_approvals` and in `GET /v1/approvals`.

Both show the same fields for a call: its raw `arguments`, the same arguments for a person to read
(`arguments_display`, invisible characters escaped: `stepwise.inputs.display_text`), the hash an answer
names them by (`arguments_sha256`) and the wait's end as an ISO time. `GET /v1/approvals` reads the owner's
index of waiting calls (`stepwise.store.waiting_approvals`); its cursor is opaque, like `GET /v1/runs`'.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any

from stepwise.inputs.display_text import arguments_display
from stepwise.models.api_responses import ApprovalList, PendingApproval, WaitingApproval
from stepwise.models.approval import Approval, WaitingCall, arguments_sha256
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.services import ApiServices
from stepwise.store import ConversationStore

CURSOR_VERSION = 1
# `<requested_at>#<run_id>#<iteration>#<index>`, as `keys.waiting_order` writes it
_WAITING_ORDER = re.compile(r"^\d{4}-\d{2}-\d{2}T[0-9:.]+Z#[A-Za-z0-9_-]{1,80}#\d{4,}#\d{2,}$")
_CURSOR_FIELD = "cursor (query parameter)"


def shown_call(call: Approval | WaitingCall) -> dict[str, Any]:
    """The fields every view of a waiting call shows (never its token)."""
    return {
        "call_id": call.call_id,
        "tool": call.tool,
        "arguments": call.arguments,
        "arguments_display": arguments_display(call.arguments),
        "arguments_sha256": arguments_sha256(call.arguments),
        "iteration": call.iteration,
        "requested_at": call.requested_at,
        "timeout_at": datetime.fromtimestamp(call.timeout_at, UTC).isoformat(timespec="seconds"),
    }


def pending_approvals(store: ConversationStore, run_id: str) -> list[PendingApproval]:
    """The run's tool calls waiting for approval, as `GET /v1/runs/{id}` shows them."""
    return [PendingApproval(**shown_call(approval)) for approval in store.approvals.list(run_id) if approval.pending]


def encode_cursor(position: str) -> str:
    """The opaque cursor that continues a listing of waiting calls after `position`."""
    document = json.dumps({"v": CURSOR_VERSION, "after": position}, separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The position a cursor holds; 422 naming the cursor for anything this API did not hand out."""
    try:
        document = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidRequest.of(_CURSOR_FIELD, "not a cursor this API returned") from None
    position = document.get("after") if isinstance(document, dict) else None
    version = document.get("v") if isinstance(document, dict) else None
    if version != CURSOR_VERSION or not isinstance(position, str) or not _WAITING_ORDER.fullmatch(position):
        raise InvalidRequest.of(_CURSOR_FIELD, "not a cursor this API returned")
    return position


def list_approvals(services: ApiServices, *, owner: str, limit: int, cursor: str | None) -> ApprovalList:
    """`GET /v1/approvals`: the caller's calls waiting for approval across their runs, oldest first."""
    page = services.runtime.store.approvals.waiting(
        owner, limit=limit, after=decode_cursor(cursor) if cursor else None, now=services.runtime.clock()
    )
    return ApprovalList(
        approvals=[
            WaitingApproval(**shown_call(call), run_id=call.run_id, profile=call.profile) for call in page.calls
        ],
        next_cursor=encode_cursor(page.next_after) if page.next_after else None,
    )
