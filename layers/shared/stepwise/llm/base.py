"""The one interface every model provider implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from stepwise.models.messages import ChatRequest, Completion


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: one request in, one normalised completion out.

    Implementations raise `LLMTransientError` for failures a retry may fix and `LLMPermanentError`
    for requests the provider rejected.
    """

    def complete(self, request: ChatRequest) -> Completion:
        """Call the model once."""
        ...


@runtime_checkable
class ListsWindow(Protocol):
    """A chat model whose server can say its context window (a local server's model listing)."""

    def listed_window(self) -> int | None:
        """The window the server lists for the model, or None when it lists none."""
        ...
