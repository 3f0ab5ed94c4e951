"""What the store returns besides domain models: the items of one iteration, session turns, run references."""

from typing import Protocol

from pydantic import BaseModel

from stepwise.models.run import RunMeta, StoredMessage
from stepwise.models.step_record import StepRecord


class RunRef(Protocol):
    """What a write needs to know of its run: its id (the partition) and when its items expire."""

    @property
    def run_id(self) -> str: ...

    @property
    def expires_at(self) -> int: ...


# Built on first use, as the state handlers read an iteration: the API and the streaming function never do.
class IterationItems(BaseModel, defer_build=True):
    """The items of one iteration a step asked for, read in a single batch; None when not stored."""

    meta: RunMeta | None = None
    assistant: StoredMessage | None = None
    # The model call's trace step stored with the assistant message (its finish reason, its usage).
    assistant_step: StepRecord | None = None
    decision: StepRecord | None = None
    previous_decision: StepRecord | None = None
    observation: StoredMessage | None = None


# Built on first use: only runs in a session read turns, while every step handler imports this module.
class SessionTurn(BaseModel, defer_build=True):
    """One earlier run of a session: the question asked and the answer given."""

    run_id: str
    created_at: str
    question: str
    answer: str | None = None
