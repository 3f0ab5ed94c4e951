"""Spans around model calls and tool calls, following OpenTelemetry's GenAI semantic conventions.

Off by default: `GenAiSpans` is then `NoSpans`, which records nothing, and OpenTelemetry is never
imported (the handlers' cold start stays as it is). With `STEPWISE_OTEL=true` (`Settings.otel`),
`spans_for` loads `stepwise.telemetry.otel_spans`, which writes spans through the OpenTelemetry API to whatever
tracer provider the process has (the ADOT Lambda layer's on AWS; none configured means no-op spans).

What a span holds is metadata only (provider, model, token counts, finish reasons, tool name and call
id): never a prompt, a message, tool arguments or an observation.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from stepwise.errors import ConfigError
from stepwise.telemetry.span_types import ChatSpan, GenAiSpans, ToolSpan

if TYPE_CHECKING:
    from stepwise.models.messages import Completion
    from stepwise.tools.observation import ToolObservation


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
        from stepwise.telemetry.otel_spans import OtelSpans
    except ModuleNotFoundError as missing:
        raise ConfigError(
            f"STEPWISE_OTEL=true needs OpenTelemetry's API ({missing.name} is not installed): "
            "pip install 'stepwise[otel]', or on AWS add the ADOT Python layer"
        ) from None
    return OtelSpans()
