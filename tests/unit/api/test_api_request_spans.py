"""The SERVER span of each API request, read from the OpenTelemetry SDK's in-memory exporter: opened around
the whole resolution (a request Powertools refuses 422 before any route has one), with the status the
client gets and the HTTP conventions' attributes (v1.37.0)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from stepwise.local.api_gateway import api_gateway_event
from stepwise.steps.api import RequestScopedResolver, json_body_reader, register_routes
from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.api.request_spans import traced_answer
from stepwise.steps.api.services import ApiServices, LazyServices
from stepwise.steps.api.stream_mark import STREAM_MARK
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.telemetry.otel_spans import OtelSpans
from tests.unit.api.conftest import STATE_MACHINE_ARN, api_config

JSON = [("content-type", "application/json"), ("x-api-key", "alice-key")]


@pytest.fixture
def traced() -> Iterator[tuple[LazyServices, InMemorySpanExporter]]:
    """The API's services with their spans recorded in memory; nothing here reaches DynamoDB or Step
    Functions (the clients point at nothing)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dynamodb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    runtime = StepRuntime(
        config=api_config(), config_dir=Path("."), store=ConversationStore(dynamodb, "t"), spans=OtelSpans(provider)
    )
    services = ApiServices(
        runtime=runtime,
        executions=StepFunctionsExecutions(stepfunctions, STATE_MACHINE_ARN),
        idempotency=IdempotentStarts(dynamodb, "t"),
    )
    yield LazyServices(lambda: services), exporter
    exporter.shutdown()


def event(method: str, target: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    return api_gateway_event(
        method=method,
        target=target,
        headers=[("host", "127.0.0.1:8080"), ("user-agent", "probe/1"), *(headers or JSON)],
        body=body,
        host="127.0.0.1:8080",
        source_ip="10.0.0.7",
    )


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


def test_a_request_refused_422_by_validation_has_its_server_span_without_an_error(
    traced: tuple[LazyServices, InMemorySpanExporter],
) -> None:
    # Given the API's resolver tracing its requests
    services, exporter = traced
    resolver = RequestScopedResolver(
        traced_by=services, enable_validation=True, json_body_deserializer=json_body_reader(services)
    )
    register_routes(resolver, services)
    # When a run is asked for with a body Powertools' validation refuses, before any route or middleware runs
    answer = resolver.resolve(event("POST", "/v1/runs?dry=1", b'{"input": 7}'), None)  # type: ignore[arg-type]
    # Then it was answered 422, and its SERVER span says so, with the HTTP attributes; a 4xx on a server span
    # is the client's, so the span's status stays unset and it has no error.type
    assert answer["statusCode"] == 422
    span = only_span(exporter)
    assert (span.name, span.kind, span.status.status_code) == ("POST /v1/runs", SpanKind.SERVER, StatusCode.UNSET)
    assert dict(span.attributes or {}) == {
        "http.request.method": "POST",
        "http.route": "/v1/runs",
        "url.path": "/v1/runs",
        "url.query": "dry=1",
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": 8080,
        "client.address": "10.0.0.7",
        "user_agent.original": "probe/1",
        "network.protocol.version": "1.1",
        "http.response.status_code": 422,
    }


def test_a_request_through_api_gateway_says_https_and_the_forwarded_port(
    traced: tuple[LazyServices, InMemorySpanExporter],
) -> None:
    # Given a request as API Gateway forwards it (X-Forwarded-Proto and -Port, the API's host)
    services, exporter = traced
    forwarded = event(
        "GET",
        "/v1/runs",
        headers=[
            ("Host", "abc.execute-api.eu-west-1.amazonaws.com"),
            ("X-Forwarded-Proto", "https"),
            ("X-Forwarded-Port", "443"),
        ],
    )
    # When it is answered
    traced_answer(services, forwarded, lambda: {"statusCode": 200})
    # Then its span has the scheme, host and port the client used
    attributes = only_span(exporter).attributes or {}
    assert (attributes["url.scheme"], attributes["server.address"], attributes["server.port"]) == (
        "https",
        "abc.execute-api.eu-west-1.amazonaws.com",
        443,
    )


def test_a_streamed_chats_202_is_recorded_as_the_200_its_client_gets(
    traced: tuple[LazyServices, InMemorySpanExporter],
) -> None:
    # Given a chat request a streaming front marked (it streams the answer itself, with 200)
    services, exporter = traced
    marked = event("POST", "/v1/chat/completions")
    marked["requestContext"][STREAM_MARK] = True
    # When the API function answers it 202 (the run started)
    traced_answer(services, marked, lambda: {"statusCode": 202})
    # Then the span records the 200 the client got
    assert (only_span(exporter).attributes or {})["http.response.status_code"] == 200


def test_an_unmarked_202_stays_202_and_a_failure_escaping_is_a_500_error(
    traced: tuple[LazyServices, InMemorySpanExporter],
) -> None:
    # Given an unmarked run start, and a request whose resolution raises
    services, exporter = traced
    traced_answer(services, event("POST", "/v1/runs"), lambda: {"statusCode": 202})

    def broken() -> dict[str, Any]:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        traced_answer(services, event("GET", "/v1/runs"), broken)
    # Then the first span says 202, and the second is a server error of status 500
    started, failed = exporter.get_finished_spans()
    assert (started.attributes or {})["http.response.status_code"] == 202
    assert failed.status.status_code is StatusCode.ERROR
    assert ((failed.attributes or {})["http.response.status_code"], (failed.attributes or {})["error.type"]) == (
        500,
        "500",
    )


def test_a_path_no_route_takes_has_a_span_named_by_its_method_without_a_route(
    traced: tuple[LazyServices, InMemorySpanExporter],
) -> None:
    # Given a request for a path the API has no route for (locally its resource is the path itself)
    services, exporter = traced
    # When it is answered 404
    traced_answer(services, event("GET", "/v1/nowhere/42"), lambda: {"statusCode": 404})
    # Then its span is named by the method alone, with no http.route (the conventions' route is a template)
    span = only_span(exporter)
    assert (span.name, "http.route" in (span.attributes or {})) == ("GET", False)
    assert (span.attributes or {})["url.path"] == "/v1/nowhere/42"
