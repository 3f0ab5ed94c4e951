"""A tool call paused for approval, as the store holds it (`APPROVAL#<iteration>#<index>` under the run)."""

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field

ApprovalStatus = Literal["pending", "approved", "denied", "timed_out"]


def arguments_sha256(arguments: dict[str, Any]) -> str:
    """The hash an approval names its call's arguments by: SHA-256, in lowercase hex, of the arguments as
    canonical JSON (keys sorted, no spaces: `,` and `:` as separators, non-ASCII characters as themselves),
    encoded in UTF-8. Clients send back the value the API shows rather than compute it."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Approval(BaseModel, defer_build=True):
    """One call's approval: who asked what, until when, and how it was answered.

    `task_token` answers the waiting task; it is never shown by the API.
    """

    run_id: str
    iteration: int
    index: int
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # the run's owner; None on a call stored before the owner's index of waiting calls existed
    owner: str | None = None
    status: ApprovalStatus = "pending"
    reason: str | None = None
    task_token: str
    requested_at: str
    timeout_at: float
    answered_by: str | None = None
    answered_at: str | None = None
    # set by ToolInvoke once it acts on the outcome: from then on it stands, and an answer the API cannot
    # confirm having sent is known to have arrived
    consumed_at: str | None = None

    @property
    def arguments_sha256(self) -> str:
        """The hash of the arguments this approval shows (`arguments_sha256`)."""
        return arguments_sha256(self.arguments)

    @property
    def pending(self) -> bool:
        """True while nobody has answered and the wait has not timed out."""
        return self.status == "pending"


class ApprovalNote(BaseModel, defer_build=True):
    """How a call that waited for approval was answered, on its tool step of the trace: by whom (the owner's
    identity; none when nobody answered in time or the wait failed), when and why, and the arguments'
    hash the answer stood for."""

    status: ApprovalStatus
    answered_by: str | None = None
    answered_at: str | None = None
    reason: str | None = None
    arguments_sha256: str


class WaitingCall(BaseModel, defer_build=True):
    """A call waiting for approval as an owner's listing finds it (the index's entry, without the token),
    with its run's profile."""

    run_id: str
    profile: str
    iteration: int
    index: int
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requested_at: str
    timeout_at: float
