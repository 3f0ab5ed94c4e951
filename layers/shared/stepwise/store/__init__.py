"""The conversation store (DynamoDB)."""

from stepwise.store.conversation import ConversationStore
from stepwise.store.directory import RunAlreadyEnded, RunDirectory, RunPage
from stepwise.store.views import IterationItems, IterationSnapshot, RunRef, SessionTurn

__all__ = [
    "ConversationStore",
    "IterationItems",
    "IterationSnapshot",
    "RunAlreadyEnded",
    "RunDirectory",
    "RunPage",
    "RunRef",
    "SessionTurn",
]
