"""A run asked to pause (`POST /v1/runs/{id}/pause`): what META holds of it, and of its wait once it waits."""

from pydantic import BaseModel, Field


class PauseView(BaseModel, defer_build=True):
    """A pause asked of a run: by whom and when, and, once the run waits at an iteration boundary, since when
    and until when (its deadline)."""

    requested_by: str = Field(description="Who asked the run to pause.")
    requested_at: str = Field(description="When the pause was asked.")
    iteration: int | None = Field(default=None, ge=0, description="The iteration the run waits after, once it waits.")
    waiting_since: str | None = Field(default=None, description="When the run began to wait (status PAUSED).")
    timeout_at: float | None = Field(default=None, description="When the wait ends the run (its deadline, epoch s).")


class PauseState(PauseView, defer_build=True):
    """The pause as META holds it (`pause`): the view, and the task token of the wait, which is never shown
    (excluded from every dump)."""

    token: str | None = Field(default=None, exclude=True, repr=False)
