"""GenAI spans (OpenTelemetry's semantic conventions) around a run's model call and tool call, recorded by
the OpenTelemetry SDK's in-memory exporter: names, kinds and attributes by value, and never any content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from stepwise.errors import LLMTransientError
from stepwise.models.messages import ChatMessage, Completion, SamplingOptions, ToolCall, Usage
from stepwise.models.run import RunOptions
from stepwise.models.state import StatePayload, ToolInvokeEvent
from stepwise.steps.format import format_run
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_invoke import tool_invoke
from tests.unit.steps.span_runtime import QueuedModel, runtime_with

QUESTION = "What time is it in Lisbon? My secret word is heliotrope."


def first_iteration(runtime: StepRuntime, options: RunOptions | None = None) -> StatePayload:
    """A run through its first guard, model call and parse."""
    meta = create_run(
        runtime,
        messages=[ChatMessage(role="user", content=QUESTION)],
        owner="alice",
        profile="default",
        options=options,
    )
    payload = StatePayload.model_validate(execution_input(meta.run_id))
    return parse(llm_call(iteration_guard(payload, runtime), runtime), runtime)


def model_and_tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    """The finished `chat` and `execute_tool` spans (a run's start and its guard have spans of their own)."""
    return [span for span in exporter.get_finished_spans() if span.name.startswith(("chat ", "execute_tool "))]


def values_of(spans: list[ReadableSpan]) -> str:
    return " ".join(str(value) for span in spans for value in (span.attributes or {}).values())


def test_a_model_call_is_a_chat_client_span_with_the_genai_attributes(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a model that asks for a tool, reporting its usage and its completion's id
    reply = Completion(
        tool_calls=[ToolCall(id="call_7", name="current_time", arguments={})],
        usage=Usage(input_tokens=42, output_tokens=7),
        model="gpt-4o-mini-2024-07-18",
        finish_reason="tool_calls",
        response_id="chatcmpl-7",
    )
    runtime = runtime_with(QueuedModel(reply), dynamodb_table, tmp_path, exporter)
    # When the run's first model call is made
    first_iteration(runtime)
    # Then one CLIENT span `chat gpt-4o-mini` holds the request and response metadata
    (span,) = model_and_tool_spans(exporter)
    assert (span.name, span.kind, span.status.status_code) == ("chat gpt-4o-mini", SpanKind.CLIENT, StatusCode.UNSET)
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.max_tokens": 300,
        "gen_ai.output.type": "text",
        "server.address": "127.0.0.1",
        "server.port": 9,
        "gen_ai.response.id": "chatcmpl-7",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 42,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }


def test_a_model_calls_span_has_the_sampling_settings_the_run_asked_for(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a run whose request set a seed, top_p, penalties, stop sequences and temperature
    sampling = SamplingOptions(seed=7, top_p=0.9, frequency_penalty=0.5, presence_penalty=0.25)
    options = RunOptions(temperature=0.2, stop=["END", "STOP"], sampling=sampling)
    runtime = runtime_with(QueuedModel(Completion(content="Noon.")), dynamodb_table, tmp_path, exporter)
    # When its first model call is made
    first_iteration(runtime, options)
    # Then its chat span says each of them as the conventions name them
    (span,) = model_and_tool_spans(exporter)
    attributes = dict(span.attributes or {})
    assert {name: attributes[name] for name in attributes if name.startswith("gen_ai.request.")} == {
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.max_tokens": 300,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.seed": 7,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.frequency_penalty": 0.5,
        "gen_ai.request.presence_penalty": 0.25,
        "gen_ai.request.stop_sequences": ("END", "STOP"),
    }


def test_a_tool_call_is_an_execute_tool_span_named_after_the_tool(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a run whose model asked for current_time
    reply = Completion(
        tool_calls=[ToolCall(id="call_7", name="current_time", arguments={})], finish_reason="tool_calls"
    )
    runtime = runtime_with(QueuedModel(reply), dynamodb_table, tmp_path, exporter)
    payload = first_iteration(runtime)
    exporter.clear()
    # When the tool call is made
    call = payload.calls[0]
    tool_invoke(ToolInvokeEvent(run_id=payload.run_id, iteration=payload.iteration, index=0, call=call), runtime)
    # Then one INTERNAL span `execute_tool current_time` names the tool and the call
    (span,) = exporter.get_finished_spans()
    assert (span.name, span.kind, span.status.status_code) == (
        "execute_tool current_time",
        SpanKind.INTERNAL,
        StatusCode.UNSET,
    )
    attributes = dict(span.attributes or {})
    description = attributes.pop("gen_ai.tool.description")
    assert attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "current_time",
        "gen_ai.tool.call.id": "call_7",
        "gen_ai.tool.type": "extension",
    }
    # with the tool's description from its spec
    assert description == runtime.tools().get("current_time").spec.description  # type: ignore[union-attr]


def test_a_failed_model_call_ends_its_span_as_an_error_of_that_type(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a model whose call fails with a message quoting the prompt
    runtime = runtime_with(
        QueuedModel(LLMTransientError(f"HTTP 503 for {QUESTION}")), dynamodb_table, tmp_path, exporter
    )
    # When the model call is made, then the step fails as before
    with pytest.raises(LLMTransientError):
        first_iteration(runtime)
    # And the span is an error naming the exception's type, without its message or any event
    (span,) = model_and_tool_spans(exporter)
    assert span.status.status_code is StatusCode.ERROR and span.status.description is None
    assert (span.attributes or {})["error.type"] == "LLMTransientError"
    assert span.events == ()


def test_no_span_carries_the_question_or_the_answer(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a run that calls a tool and answers
    replies = (
        Completion(tool_calls=[ToolCall(id="call_7", name="current_time", arguments={"tz": "Europe/Lisbon"})]),
        Completion(content="It is noon in Lisbon, heliotrope."),
    )
    runtime = runtime_with(QueuedModel(*replies), dynamodb_table, tmp_path, exporter)
    payload = first_iteration(runtime)
    event = ToolInvokeEvent(run_id=payload.run_id, iteration=payload.iteration, index=0, call=payload.calls[0])
    tool_invoke(event, runtime)
    parse(llm_call(iteration_guard(payload, runtime), runtime), runtime)
    # Then three model and tool spans were recorded, and no span's attributes hold a message, an argument or a result
    spans = model_and_tool_spans(exporter)
    assert [span.name for span in spans] == ["chat gpt-4o-mini", "execute_tool current_time", "chat gpt-4o-mini"]
    assert not any(word in values_of(list(exporter.get_finished_spans())) for word in ("heliotrope", "Lisbon", "noon"))


def test_the_structured_answers_formatting_call_is_a_chat_span_too(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a profile asking for a structured answer, and a model that answers, then formats it
    schema = {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]}
    replies = (Completion(content="It is noon."), Completion(content='{"time": "12:00"}', finish_reason="stop"))
    runtime = runtime_with(QueuedModel(*replies), dynamodb_table, tmp_path, exporter, response_schema=schema)
    # When the run is formatted
    format_run(first_iteration(runtime), runtime)
    # Then the formatting call has its own chat span, with its finish reason
    spans = model_and_tool_spans(exporter)
    assert [span.name for span in spans] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    assert (spans[1].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
