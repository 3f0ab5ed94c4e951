"""The run's ids on spans that other libraries start inside a run's step (the MCP SDK's `MCP send ...`).

Our own spans are given `stepwise.run_id` (and `session.id`) when they start; a library's instrumentation
knows nothing of runs. `RunAttributes`, a span processor on the process's tracer provider, copies both from
a span's parent when the parent is a span of this process that carries them, so every span under a run's
step belongs to the run as our own do. The ids are not put in the context's baggage instead: the MCP SDK
(like any instrumented client) propagates the context to the servers it calls, and a run's id is not
theirs to read. Imported only when spans are on.
"""

from __future__ import annotations

import weakref
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as trace_api

RUN_ID = "stepwise.run_id"
SESSION_ID = "session.id"
_CARRIED = (RUN_ID, SESSION_ID)
# the providers already given the processor (a process builds a runtime, and its spans, more than once)
_EQUIPPED: weakref.WeakSet[Any] = weakref.WeakSet()


def carry_run_attributes(provider: trace_api.TracerProvider) -> None:
    """Give `provider` the `RunAttributes` processor, once; nothing for a provider that takes no processor
    (the API's no-op one, when the SDK is not installed)."""
    add = getattr(provider, "add_span_processor", None)
    if add is None or provider in _EQUIPPED:
        return
    add(_processor())
    _EQUIPPED.add(provider)


def inherited(parent_context: otel_context.Context | None) -> dict[str, Any]:
    """The run's ids on the span current in `parent_context`, if it is a span of this process with them."""
    attributes = getattr(trace_api.get_current_span(parent_context), "attributes", None) or {}
    return {name: attributes[name] for name in _CARRIED if name in attributes}


def _processor() -> Any:
    from opentelemetry.sdk.trace import Span, SpanProcessor

    class RunAttributes(SpanProcessor):
        """Copies the run's ids from a span's parent onto it when it starts without them."""

        def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
            if span.attributes and RUN_ID in span.attributes:
                return
            ids = inherited(parent_context)
            if ids:
                span.set_attributes(ids)

    return RunAttributes()
