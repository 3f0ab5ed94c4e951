"""Spans around model calls and tool calls, following OpenTelemetry's GenAI semantic conventions.

Off by default: `GenAiSpans` is then `NoSpans`, which records nothing, and OpenTelemetry is never
imported (the handlers' cold start stays as it is). With `STEPWISE_OTEL=true` (`Settings.otel`),
`spans_for` loads `stepwise.otel_spans`, which writes spans through the OpenTelemetry API to whatever
tracer provider the process has (the ADOT Lambda layer's on AWS; none configured means no-op spans).

What a span holds is metadata only (provider, model, token counts, finish reasons, tool name and call
id): never a prompt, a message, tool arguments or an observation.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol

from stepwise.errors import ConfigError

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


class _Nothing:
    def completed(self, completion: Completion) -> None:
        """Nothing is recorded."""

    def observed(self, observation: ToolObservation) -> None:
        """Nothing is recorded."""


class NoSpans:
    """Spans off: every call is a no-op, and nothing of OpenTelemetry is loaded."""

    @contextmanager
    def chat(
        self, *, provider: str, model: str, max_tokens: int | None, temperature: float | None
    ) -> Iterator[ChatSpan]:
        """No span."""
        yield _Nothing()

    @contextmanager
    def tool(self, *, name: str, call_id: str) -> Iterator[ToolSpan]:
        """No span."""
        yield _Nothing()


def spans_for(enabled: bool) -> GenAiSpans:
    """The spans the settings ask for: OpenTelemetry's when enabled (imported only then), else none."""
    if not enabled:
        return NoSpans()
    try:
        from stepwise.otel_spans import OtelSpans
    except ModuleNotFoundError as missing:
        raise ConfigError(
            f"STEPWISE_OTEL=true needs OpenTelemetry's API ({missing.name} is not installed): "
            "pip install 'stepwise[otel]', or on AWS add the ADOT Python layer"
        ) from None
    return OtelSpans()
