"""A step runtime whose spans are recorded by the OpenTelemetry SDK's in-memory exporter, a model that plays
queued replies, and a run taken to its first tool call: what the span and step tests build on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatRequest, Completion
from stepwise.steps import iteration_guard, llm_call, parse
from stepwise.steps.runs import execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.telemetry.otel_spans import OtelSpans

LOOPBACK_MODEL: dict[str, Any] = {
    "provider": "openai",
    "base_url": "http://127.0.0.1:9/v1",
    "model": "gpt-4o-mini",
    "capabilities": {"native_tools": True},
}
"""A model entry no request reaches: the runtime is given a `QueuedModel` in its place."""


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
            "models": {"m": LOOPBACK_MODEL},
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


def to_the_first_tool_call(runtime: StepRuntime, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `run_id`'s first iteration through Parse, as the state machine does: the state payload, and the
    ToolInvoke Map item of the first call the model asked for."""
    payload = parse.handle(llm_call.handle(iteration_guard.handle(execution_input(run_id), runtime), runtime), runtime)
    item = {
        "run_id": run_id,
        "iteration": 1,
        "index": 0,
        "call": payload["calls"][0],
        "trace": payload["run"]["trace"],
    }
    return payload, item
