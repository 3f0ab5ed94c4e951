"""The conversation store (DynamoDB)."""

from typing import TYPE_CHECKING, Any

from stepwise.store.conversation import ConversationStore
from stepwise.store.directory import RunAlreadyEnded, RunDirectory
from stepwise.store.views import IterationItems, RunRef, SessionTurn

if TYPE_CHECKING:
    from stepwise.store.run_listing import RunPage

__all__ = [
    "ConversationStore",
    "IterationItems",
    "RunAlreadyEnded",
    "RunDirectory",
    "RunPage",
    "RunRef",
    "SessionTurn",
]


def __getattr__(name: str) -> Any:
    # the listing's page loads with the listing (only the API lists runs), not with every step's store
    if name == "RunPage":
        from stepwise.store.run_listing import RunPage

        return RunPage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
