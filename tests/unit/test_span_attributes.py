"""What the spans say beyond a run's steps: where a model is served from, the output type a request asks
for, and the run's ids on spans another library starts inside a run (recorded by the SDK's in-memory
exporter)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepwise.config.llm import BedrockModelConfig, OpenAIModelConfig, ScriptedModelConfig
from stepwise.llm.endpoints import ModelEndpoint, model_server
from stepwise.models.messages import ChatMessage, ChatRequest
from stepwise.models.trace_context import TraceContext
from stepwise.telemetry.otel_spans import OtelSpans
from stepwise.telemetry.span_attributes import chat_request_attributes

RUN_TRACE = TraceContext(traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", session_id="s-1")


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider, exporter
    tracer_provider.shutdown()


@pytest.mark.parametrize(
    ("config", "server"),
    [
        (
            OpenAIModelConfig(provider="openai", base_url="https://api.openai.com/v1", model="gpt"),
            ("api.openai.com", 443),
        ),
        (OpenAIModelConfig(provider="openai", base_url="http://10.0.0.5:8000/v1", model="m"), ("10.0.0.5", 8000)),
        (
            BedrockModelConfig(provider="bedrock", model_id="amazon.nova-lite-v1:0", region="eu-west-1"),
            ("bedrock-runtime.eu-west-1.amazonaws.com", 443),
        ),
        (BedrockModelConfig(provider="bedrock", model_id="amazon.nova-lite-v1:0"), None),
    ],
)
def test_a_models_server_is_its_base_urls_host_and_port_or_bedrocks_in_its_region(
    config: OpenAIModelConfig | BedrockModelConfig, server: tuple[str, int] | None
) -> None:
    # Given a configured model, when its server is asked for, then it is where its calls go (None: not known)
    assert model_server(config) == server


def test_the_scripted_model_has_no_server() -> None:
    # Given the scripted model, which answers in process, then no server is named
    assert model_server(ScriptedModelConfig(provider="scripted", scenarios=[{"turns": [{"content": "hi"}]}])) is None


def test_a_request_with_a_response_schema_asks_for_json_output_and_one_without_for_text() -> None:
    # Given two requests, one with a response schema
    messages = [ChatMessage(role="user", content="hi")]
    schema = {"type": "object"}
    endpoint = ModelEndpoint("bedrock", "amazon.nova-lite-v1:0")
    # When their chat attributes are built, then the output type follows the schema and Bedrock is `aws.bedrock`
    structured = chat_request_attributes(endpoint, ChatRequest(messages=messages, response_schema=schema))
    plain = chat_request_attributes(endpoint, ChatRequest(messages=messages))
    assert (structured["gen_ai.output.type"], plain["gen_ai.output.type"]) == ("json", "text")
    assert structured["gen_ai.provider.name"] == "aws.bedrock"
    assert "server.address" not in structured


def test_a_span_another_library_starts_inside_a_runs_step_carries_the_runs_ids(
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    # Given the run's spans on a provider, and another library's tracer on the same provider
    tracer_provider, exporter = provider
    spans = OtelSpans(tracer_provider)
    library = tracer_provider.get_tracer("mcp-python-sdk")
    # When that library starts a span inside a step of a run, its child, and one outside any run
    with (
        spans.step("ToolInvoke", run_id="run-1", trace=RUN_TRACE),
        library.start_as_current_span("MCP send tools/call now"),
        library.start_as_current_span("nested"),
    ):
        pass
    with library.start_as_current_span("MCP send initialize"):
        pass
    # Then the spans inside the run carry its id and session, and the one outside carries neither
    by_name = {span.name: dict(span.attributes or {}) for span in exporter.get_finished_spans()}
    run_ids = {"stepwise.run_id": "run-1", "session.id": "s-1"}
    assert by_name["MCP send tools/call now"] == run_ids
    assert by_name["nested"] == run_ids
    assert by_name["MCP send initialize"] == {}
