"""The conversation store (DynamoDB)."""

from stepwise.store.conversation import ConversationStore
from stepwise.store.directory import RunAlreadyEnded, RunDirectory, RunPage
from stepwise.store.views import IterationItems, RunRef, SessionTurn

__all__ = [
    "ConversationStore",
    "IterationItems",
    "RunAlreadyEnded",
    "RunDirectory",
    "RunPage",
    "RunRef",
    "SessionTurn",
]
