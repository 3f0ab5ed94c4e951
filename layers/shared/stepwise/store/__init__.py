"""The conversation store (DynamoDB)."""

from stepwise.store.conversation import ConversationStore, IterationSnapshot, SessionTurn

__all__ = ["ConversationStore", "IterationSnapshot", "SessionTurn"]
