"""A run's steps, each invoked as its Lambda entry is, in one trace under the span that created the run:
recorded by the OpenTelemetry SDK's in-memory exporter, with the run's id and session on every span."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from stepwise.models.messages import ChatMessage, Completion, ToolCall
from stepwise.models.state import StatePayload
from stepwise.steps import format as format_step
from stepwise.steps import iteration_guard, llm_call, parse, tool_invoke
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from tests.unit.steps.span_runtime import QueuedModel, runtime_with, to_the_first_tool_call

CLIENT_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def run_through_every_step(runtime: StepRuntime) -> str:
    """A run started inside a request that continues a client's trace, then each state's Lambda entry."""
    with runtime.spans.request(
        method="POST", route="/v1/runs", path="/v1/runs", headers={"TraceParent": CLIENT_TRACEPARENT}
    ) as request:
        meta = create_run(
            runtime,
            messages=[ChatMessage(role="user", content="What time is it?")],
            owner="alice",
            profile="default",
            session_id="session-7",
        )
        request.responded(202)
    payload, item = to_the_first_tool_call(runtime, meta.run_id)
    tool_invoke.handle(item, runtime)
    payload = parse.handle(llm_call.handle(iteration_guard.handle(payload, runtime), runtime), runtime)
    format_step.handle(payload, runtime)
    return meta.run_id


def test_every_span_of_a_run_is_in_the_callers_trace_under_the_request_with_the_run_and_session_ids(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a model that calls current_time, then answers
    replies = (
        Completion(tool_calls=[ToolCall(id="call_7", name="current_time", arguments={})]),
        Completion(content="It is noon."),
    )
    runtime = runtime_with(QueuedModel(*replies), dynamodb_table, tmp_path, exporter)
    # When the run is created in a request and goes through every state
    run_id = run_through_every_step(runtime)
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def parent_name(span: Any) -> str | None:
        return by_id[span.parent.span_id].name if span.parent and span.parent.span_id in by_id else None

    # Then all share the client's trace id, and the request's parent is the client's span
    assert {span.context.trace_id for span in spans} == {0x0AF7651916CD43DD8448EB211C80319C}
    [request] = [span for span in spans if span.kind is SpanKind.SERVER]
    assert (request.name, request.parent.span_id if request.parent else None) == ("POST /v1/runs", 0xB7AD6B7169203331)
    assert (request.attributes or {})["http.response.status_code"] == 202
    # And the run's start is the request's child, each state's span the start's, each call its state's
    assert parent_name(next(span for span in spans if span.name == "invoke_agent default")) == "POST /v1/runs"
    steps = [span.name for span in spans if parent_name(span) == "invoke_agent default"]
    assert steps == ["IterationGuard", "LLMCall", "Parse", "ToolInvoke", "IterationGuard", "LLMCall", "Parse", "Format"]
    assert {parent_name(span) for span in spans if span.name.startswith("chat ")} == {"LLMCall"}
    assert [parent_name(span) for span in spans if span.name.startswith("execute_tool ")] == ["ToolInvoke"]
    # And the run's start names the agent's provider, model and server, and the session as the conversation
    start = next(span for span in spans if span.name == "invoke_agent default")
    assert {name: value for name, value in (start.attributes or {}).items() if not name.startswith("stepwise.")} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "default",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "server.address": "127.0.0.1",
        "server.port": 9,
        "gen_ai.conversation.id": "session-7",
        "session.id": "session-7",
    }
    # And every span names the run and its session
    for span in spans:
        assert (span.attributes or {}).get("stepwise.run_id") == run_id, span.name
        assert (span.attributes or {}).get("session.id") == "session-7", span.name


def test_a_failed_runs_failure_step_joins_its_trace(
    dynamodb_table: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a run past its first guard, whose next task failed
    runtime = runtime_with(QueuedModel(), dynamodb_table, tmp_path, exporter)
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="hi")], owner="alice", profile="default")
    payload = iteration_guard.handle(execution_input(meta.run_id), runtime)
    failure = payload | {"error": {"Error": "LLMPermanentError", "Cause": "refused"}}
    # When FormatFailure records it
    format_step.handle(failure, runtime)
    # Then its span is in the run's trace, under the run's start
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert spans["FormatFailure"].context.trace_id == spans["invoke_agent default"].context.trace_id
    assert spans["FormatFailure"].parent is not None
    assert spans["FormatFailure"].parent.span_id == spans["invoke_agent default"].context.span_id
    assert StatePayload.model_validate(payload).trace is not None


def test_a_refused_request_is_not_a_server_error_and_a_failed_one_is(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given the spans of a process
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from stepwise.telemetry.otel_spans import OtelSpans

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = OtelSpans(provider)
    # When one request is answered 404 and another 503
    for status in (404, 503):
        with spans.request(method="GET", route="/v1/runs/{run_id}", path="/v1/runs/x", headers={}) as request:
            request.responded(status)
    # Then the 404 is not an error and the 503 is, with its status as the error type
    refused, failed = exporter.get_finished_spans()
    assert refused.status.status_code is StatusCode.UNSET
    assert (failed.status.status_code, (failed.attributes or {})["error.type"]) == (StatusCode.ERROR, "503")
