"""A tool call paused for approval, as the store holds it (`APPROVAL#<iteration>#<index>` under the run)."""

from typing import Any, Literal

from pydantic import BaseModel, Field

ApprovalStatus = Literal["pending", "approved", "denied", "timed_out"]


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
    def pending(self) -> bool:
        """True while nobody has answered and the wait has not timed out."""
        return self.status == "pending"
