"""What a model or tool call's span is told, and what opens spans: the interface every span backend
implements (`spans.NoSpans`, `otel_spans.OtelSpans`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from stepwise.models.messages import Completion
    from stepwise.tools.observation import ToolObservation


class ChatSpan(Protocol):
    """The span of one model call, told what the model answered."""

    def completed(self, completion: Completion) -> None:
        """Record the response's model, token usage and finish reason."""
        ...


class ToolSpan(Protocol):
    """The span of one tool call, told how it went."""

    def observed(self, observation: ToolObservation) -> None:
        """Record whether the call succeeded."""
        ...


class GenAiSpans(Protocol):
    """Opens the spans of model and tool calls."""

    def chat(
        self, *, provider: str, model: str, max_tokens: int | None, temperature: float | None
    ) -> AbstractContextManager[ChatSpan]:
        """A `chat {model}` span around one model call (`provider` as configured: openai, bedrock, scripted);
        an exception ends it as an error."""
        ...

    def tool(self, *, name: str, call_id: str) -> AbstractContextManager[ToolSpan]:
        """An `execute_tool {name}` span around one tool call; an exception ends it as an error."""
        ...
