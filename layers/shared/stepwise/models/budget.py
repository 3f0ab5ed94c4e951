"""A run waiting at its budget (`on_budget: ask`): what META holds of the wait, and how it was answered."""

from typing import Literal

from pydantic import BaseModel, Field

BudgetReason = Literal["token_budget", "cost_budget"]
BudgetAnswer = Literal["raised", "ended"]


class BudgetWaitView(BaseModel, defer_build=True):
    """A run's latest wait at its budget (`on_budget: ask`): why it waits, until when, and its answer."""

    iteration: int = Field(ge=0)
    reason: BudgetReason = Field(description="The budget the run reached.")
    spent_tokens: int = Field(
        default=0, ge=0, description="Input and output tokens spent when the wait began, its child runs' included."
    )
    spent_usd: float | None = Field(
        default=None, description="The cost spent when the wait began, its child runs' included, when priced."
    )
    requested_at: str = Field(default="", description="When the wait began (set by the store as it is stored).")
    timeout_at: float = Field(description="When the wait ends the run if nobody answered (epoch seconds).")
    answer: BudgetAnswer | None = Field(default=None, description="`raised` or `ended`, once answered.")
    answered_by: str | None = None
    answered_at: str | None = None
    added_tokens: int | None = None
    added_usd: float | None = None

    @property
    def pending(self) -> bool:
        """True while nobody answered the wait."""
        return self.answer is None


class BudgetWait(BudgetWaitView, defer_build=True):
    """The wait as META holds it (`budget_wait`): the view, and the task token that answers the wait, which
    is never shown (excluded from every dump)."""

    token: str | None = Field(default=None, exclude=True, repr=False)
