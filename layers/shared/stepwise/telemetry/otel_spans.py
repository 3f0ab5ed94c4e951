"""GenAI spans written with the OpenTelemetry API; imported only when `STEPWISE_OTEL` is on.

Attribute names and span names are those of OpenTelemetry's GenAI semantic conventions: a model call is
a CLIENT span `chat {gen_ai.request.model}` with `gen_ai.operation.name=chat`, `gen_ai.provider.name`,
`gen_ai.request.model` (and `max_tokens`, `temperature` when set), `gen_ai.response.model`,
`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons`; a tool call
is an INTERNAL span `execute_tool {gen_ai.tool.name}` with `gen_ai.operation.name=execute_tool`,
`gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type=function`. A failure sets the span's status
to ERROR with `error.type` (the exception's class, or `tool_error` for a failed tool call). No content.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from stepwise.models.messages import Completion
from stepwise.telemetry.span_types import ChatSpan, ToolSpan
from stepwise.tools.observation import ToolObservation

INSTRUMENTATION_NAME = "stepwise"
# gen_ai.provider.name: OpenTelemetry's well-known names for the configured providers, ours for the scripted one
PROVIDER_NAMES = {"openai": "openai", "bedrock": "aws.bedrock", "scripted": "stepwise.scripted"}


class _ChatSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def completed(self, completion: Completion) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": completion.usage.input_tokens,
            "gen_ai.usage.output_tokens": completion.usage.output_tokens,
        }
        if completion.model:
            attributes["gen_ai.response.model"] = completion.model
        if completion.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [completion.finish_reason]
        self._span.set_attributes(attributes)


class _ToolSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def observed(self, observation: ToolObservation) -> None:
        if not observation.ok:
            self._span.set_attribute("error.type", "tool_error")
            self._span.set_status(Status(StatusCode.ERROR))


class OtelSpans:
    """GenAI spans through `tracer_provider` (the process's global one by default)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(INSTRUMENTATION_NAME, tracer_provider=tracer_provider)

    @contextmanager
    def _span(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Iterator[trace.Span]:
        # the exception is recorded by type only: its message may quote a prompt or a tool's answer
        with self._tracer.start_as_current_span(
            name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield span
            except Exception as error:
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR))
                raise

    @contextmanager
    def chat(
        self, *, provider: str, model: str, max_tokens: int | None, temperature: float | None
    ) -> Iterator[ChatSpan]:
        """A CLIENT span `chat {model}` around one model call."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
            "gen_ai.request.model": model,
        }
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        with self._span(f"chat {model}", SpanKind.CLIENT, attributes) as span:
            yield _ChatSpan(span)

    @contextmanager
    def tool(self, *, name: str, call_id: str) -> Iterator[ToolSpan]:
        """An INTERNAL span `execute_tool {name}` around one tool call."""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        with self._span(f"execute_tool {name}", SpanKind.INTERNAL, attributes) as span:
            yield _ToolSpan(span)
