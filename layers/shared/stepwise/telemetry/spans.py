"""The spans of a run, following OpenTelemetry's semantic conventions v1.37.0 (HTTP, GenAI).

Off by default: `GenAiSpans` is then `NoSpans`, which records nothing, and OpenTelemetry is never
imported (the handlers' cold start stays as it is). With `Settings.otel` on (`STEPWISE_OTEL=true`, or an
`OTEL_TRACES_EXPORTER` set), `spans_for` loads `stepwise.telemetry.otel_spans`, which writes spans through
the OpenTelemetry API to the process's tracer provider: the ADOT Lambda layer's on AWS, or one the
OpenTelemetry SDK builds from the standard `OTEL_*` variables (`otel_setup`).

What a span holds is metadata only (ids, provider, model, server, the request's settings, token counts,
finish reasons, tool name, description and call id, HTTP method, route, URL and status; `span_attributes`):
never a prompt, a message, tool arguments or an observation.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from stepwise.telemetry.span_types import ChatSpan, GenAiSpans, RequestSpan, ToolSpan

if TYPE_CHECKING:
    from stepwise.llm.endpoints import ModelEndpoint
    from stepwise.models.messages import ChatRequest, Completion
    from stepwise.models.trace_context import TraceContext
    from stepwise.tools.observation import ToolObservation


class _Nothing:
    def completed(self, completion: Completion) -> None:
        """Nothing is recorded."""

    def observed(self, observation: ToolObservation) -> None:
        """Nothing is recorded."""

    def responded(self, status_code: int) -> None:
        """Nothing is recorded."""


class NoSpans:
    """Spans off: every call is a no-op, and nothing of OpenTelemetry is loaded."""

    @contextmanager
    def request(
        self,
        *,
        method: str,
        route: str | None,
        path: str,
        headers: Mapping[str, str],
        query: str = "",
        client_address: str | None = None,
        protocol: str | None = None,
    ) -> Iterator[RequestSpan]:
        """No span."""
        yield _Nothing()

    @contextmanager
    def command(self, name: str) -> Iterator[None]:
        """No span."""
        yield

    def run_started(
        self, *, run_id: str, profile: str, session_id: str | None, endpoint: ModelEndpoint
    ) -> TraceContext | None:
        """No span, no context."""
        return None

    @contextmanager
    def step(
        self, name: str, *, run_id: str, trace: TraceContext | None, started_ns: int | None = None
    ) -> Iterator[None]:
        """No span."""
        yield

    @contextmanager
    def chat(self, *, endpoint: ModelEndpoint, request: ChatRequest) -> Iterator[ChatSpan]:
        """No span."""
        yield _Nothing()

    @contextmanager
    def tool(self, *, name: str, call_id: str, description: str | None = None) -> Iterator[ToolSpan]:
        """No span."""
        yield _Nothing()


def spans_for(enabled: bool) -> GenAiSpans:
    """The spans the settings ask for: OpenTelemetry's when enabled (imported only then), else none.

    Enabled, the process's tracer provider is configured from the `OTEL_*` variables unless one already
    is (ADOT's wrapper configures it before the handler is imported). Without OpenTelemetry installed the
    spans are off, said once in a warning line: tracing never stops a run."""
    if not enabled:
        return NoSpans()
    try:
        from stepwise.telemetry.otel_setup import configure_tracing
        from stepwise.telemetry.otel_spans import OtelSpans
    except ModuleNotFoundError as missing:
        _warn_not_installed(missing.name or "opentelemetry")
        return NoSpans()
    configure_tracing()
    return OtelSpans()


@cache
def _warn_not_installed(module: str) -> None:
    from stepwise.telemetry.observability import logger

    logger.warning(
        f"tracing is off: STEPWISE_OTEL or the OTEL_* settings ask for spans, but OpenTelemetry's API ({module}) "
        "is not installed: pip install 'stepwise[otel]', or on AWS add the ADOT Python layer"
    )


def flush_spans(timeout_millis: int = 5000) -> None:
    """Export the spans a process still holds, before it ends without running its exit handlers
    (`os._exit`); nothing when OpenTelemetry was never loaded."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import trace

    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush(timeout_millis)
