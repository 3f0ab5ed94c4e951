"""A step runtime whose spans are recorded by the OpenTelemetry SDK's in-memory exporter, and a model
that plays queued replies: what the span tests build on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatRequest, Completion
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.telemetry.otel_spans import OtelSpans


class QueuedModel:
    """A chat model that plays queued completions, or raises queued errors."""

    def __init__(self, *replies: Completion | Exception) -> None:
        self.replies = list(replies)

    def complete(self, request: ChatRequest) -> Completion:
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def runtime_with(
    model: QueuedModel, table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter, **profile: Any
) -> StepRuntime:
    config = StepwiseConfig.from_mapping(
        {
            "models": {
                "m": {
                    "provider": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "gpt-4o-mini",
                    "capabilities": {"native_tools": True},
                }
            },
            "tools": {"builtin": ["current_time"]},
            "profiles": {
                "default": {"model": "m", "strategy": "function_calling", "tools": ["current_time"], "max_tokens": 300}
                | profile
            },
        },
        environ={},
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client, table_name = table
    return StepRuntime(
        config=config,
        config_dir=tmp_path,
        store=ConversationStore(client, table_name),
        chat_models={"m": model},
        spans=OtelSpans(provider),
    )
