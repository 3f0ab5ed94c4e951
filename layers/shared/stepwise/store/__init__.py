"""The conversation store (DynamoDB)."""

from stepwise.store.conversation import ConversationStore, IterationSnapshot, SessionTurn
from stepwise.store.directory import RunAlreadyEnded, RunDirectory, RunPage

__all__ = ["ConversationStore", "IterationSnapshot", "RunAlreadyEnded", "RunDirectory", "RunPage", "SessionTurn"]
