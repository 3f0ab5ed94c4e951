"""A run's spans written with the OpenTelemetry API; imported only when spans are on.

One trace per run. Its root is the API request that started it (a SERVER span `{method} {route}`, which
continues the caller's own trace when the request carries a `traceparent`), or `stepwise run`. The run's
creation records `invoke_agent {profile}` under it, and that span's W3C context travels with the run (on
its META, then in the state payload's `run` field), so each state's span (`IterationGuard`, `LLMCall`,
`Parse`, `ToolInvoke`, `AwaitApproval`, `AwaitBudget`, `Format`, `FormatFailure`, `ExecutionEnded`), in whatever Lambda
or worker process it runs, is its child. Model and tool calls are children of their state's span. Every
span of a run carries `stepwise.run_id`, and `session.id` when the run has a session; so does any span
another library starts under one of them (the MCP SDK's `MCP send tools/call ...`: `run_attributes`).

Names, kinds, attributes and statuses follow OpenTelemetry's semantic conventions v1.37.0 (HTTP, stable;
GenAI, development), listed per span in `span_attributes` and docs/operations.md:
- a request is a SERVER span with `http.request.method`, `url.path`, `url.scheme`, `http.route`,
  `url.query`, `server.address`/`server.port`, `client.address`, `user_agent.original` and
  `http.response.status_code`; only a 5xx is an error (status ERROR, `error.type` the status code): a 4xx
  is the caller's, which the conventions leave unset on a server span;
- the run's start is INTERNAL `invoke_agent {gen_ai.agent.name}` with `gen_ai.provider.name` and
  `gen_ai.request.model` of the profile's model, and `gen_ai.conversation.id` (the session);
- a model call is a CLIENT span `chat {gen_ai.request.model}` with the provider, the request's settings
  (`max_tokens`, `temperature`, `top_p`, `seed`, penalties, `stop_sequences`), `gen_ai.output.type`,
  `server.address`/`server.port`, and from the response `gen_ai.response.id`, `.model`, `.finish_reasons`
  and the token usage;
- a tool call is INTERNAL `execute_tool {gen_ai.tool.name}` with `gen_ai.tool.call.id`, its description and
  `gen_ai.tool.type=extension` (the agent executes it).
A failure sets the span's status to ERROR with `error.type` (the exception's class, or `tool_error` for a
failed tool call). No content.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry import trace as trace_api
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.semconv.attributes.http_attributes import HTTP_RESPONSE_STATUS_CODE
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from stepwise.llm.endpoints import ModelEndpoint
from stepwise.models.messages import ChatRequest, Completion
from stepwise.models.trace_context import TraceContext
from stepwise.telemetry.run_attributes import RUN_ID, SESSION_ID, carry_run_attributes
from stepwise.telemetry.span_attributes import (
    GEN_AI_CONVERSATION_ID,
    agent_attributes,
    chat_request_attributes,
    chat_response_attributes,
    http_server_attributes,
    tool_attributes,
)
from stepwise.telemetry.span_types import ChatSpan, RequestSpan, ToolSpan
from stepwise.tools.observation import ToolObservation

INSTRUMENTATION_NAME = "stepwise"
# The payload's context is W3C trace context whatever OTEL_PROPAGATORS says (it is our own carrier);
# a request's headers are read with the process's propagators, as any instrumented server reads them.
_W3C = TraceContextTextMapPropagator()
# The run a step's spans belong to, so the model and tool spans inside it carry its ids too.
_RUN_ATTRIBUTES: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "stepwise_run_attributes", default=()
)


def _run_attributes(run_id: str, session_id: str | None) -> dict[str, str]:
    attributes = {RUN_ID: run_id}
    if session_id:
        attributes[SESSION_ID] = session_id
    return attributes


class _ChatSpan:
    def __init__(self, span: trace_api.Span) -> None:
        self._span = span

    def completed(self, completion: Completion) -> None:
        self._span.set_attributes(chat_response_attributes(completion))


class _ToolSpan:
    def __init__(self, span: trace_api.Span) -> None:
        self._span = span

    def observed(self, observation: ToolObservation) -> None:
        if not observation.ok:
            self._span.set_attribute(ERROR_TYPE, "tool_error")
            self._span.set_status(Status(StatusCode.ERROR))


class _RequestSpan:
    def __init__(self, span: trace_api.Span) -> None:
        self._span = span

    def responded(self, status_code: int) -> None:
        self._span.set_attribute(HTTP_RESPONSE_STATUS_CODE, status_code)
        if status_code >= 500:
            self._span.set_attribute(ERROR_TYPE, str(status_code))
            self._span.set_status(Status(StatusCode.ERROR))


class OtelSpans:
    """The run's spans through `tracer_provider` (the process's global one by default)."""

    def __init__(self, tracer_provider: trace_api.TracerProvider | None = None) -> None:
        self._tracer = trace_api.get_tracer(INSTRUMENTATION_NAME, tracer_provider=tracer_provider)
        carry_run_attributes(tracer_provider or trace_api.get_tracer_provider())

    @contextmanager
    def _span(
        self,
        name: str,
        kind: SpanKind,
        attributes: dict[str, Any],
        *,
        parent: otel_context.Context | None = None,
        start_time: int | None = None,
        links: list[Link] | None = None,
        exception_is_error: bool = True,
    ) -> Iterator[trace_api.Span]:
        # the exception is recorded by type only: its message may quote a prompt or a tool's answer
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=kind,
            attributes=dict(_RUN_ATTRIBUTES.get()) | attributes,
            links=links,
            start_time=start_time,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except Exception as error:
                if exception_is_error:
                    span.set_attribute(ERROR_TYPE, type(error).__name__)
                    span.set_status(Status(StatusCode.ERROR))
                raise

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
        """A SERVER span `{method} {route}` around one API request, in the caller's trace if it sent one.

        An exception passing through is not by itself an error here: the API answers most of them with a
        4xx, which HTTP's conventions do not count as a server error; the caller says what was answered."""
        lowered = {name.lower(): value for name, value in headers.items()}
        attributes = http_server_attributes(
            method=method,
            route=route,
            path=path,
            query=query,
            headers=lowered,
            client_address=client_address,
            protocol=protocol,
        )
        parent = propagate.extract(lowered)
        token = _RUN_ATTRIBUTES.set(())
        try:
            name = f"{method} {route}" if route else method
            with self._span(name, SpanKind.SERVER, attributes, parent=parent, exception_is_error=False) as span:
                yield _RequestSpan(span)
        finally:
            _RUN_ATTRIBUTES.reset(token)

    @contextmanager
    def command(self, name: str) -> Iterator[None]:
        """The root span of a local command that starts a run."""
        with self._span(name, SpanKind.INTERNAL, {}, parent=otel_context.Context()):
            yield

    def run_started(
        self, *, run_id: str, profile: str, session_id: str | None, endpoint: ModelEndpoint
    ) -> TraceContext | None:
        """Record `invoke_agent {profile}` under the current span; its W3C context, for the run's steps."""
        run = _run_attributes(run_id, session_id)
        # the request that creates the run is part of it too
        trace_api.get_current_span().set_attributes(run)
        attributes = agent_attributes(profile, endpoint, session_id) | run
        carrier: dict[str, str] = {}
        with self._span(f"invoke_agent {profile}", SpanKind.INTERNAL, attributes):
            _W3C.inject(carrier)
        if "traceparent" not in carrier:
            return None  # nothing is recorded (no SDK, or not sampled and not propagated)
        return TraceContext(
            traceparent=carrier["traceparent"], tracestate=carrier.get("tracestate"), session_id=session_id
        )

    @contextmanager
    def step(
        self, name: str, *, run_id: str, trace: TraceContext | None, started_ns: int | None = None
    ) -> Iterator[None]:
        """A span for one state's work on the run, the child of the run's `invoke_agent` span.

        The invocation's own span (ADOT's Lambda instrumentation records one, in the trace Lambda was
        invoked in) is linked, not the parent: the run's trace is the one the payload carries.
        """
        carrier = {"traceparent": trace.traceparent} if trace else {}
        if trace is not None and trace.tracestate:
            carrier["tracestate"] = trace.tracestate
        parent = _W3C.extract(carrier)
        invocation = _current_span_context()
        run_trace_id = trace_api.get_current_span(parent).get_span_context().trace_id
        links = [Link(invocation)] if invocation is not None and invocation.trace_id != run_trace_id else None
        token = _RUN_ATTRIBUTES.set(tuple(_run_attributes(run_id, trace.session_id if trace else None).items()))
        try:
            with self._span(
                name,
                SpanKind.INTERNAL,
                {"stepwise.step": name},
                parent=parent,
                start_time=started_ns,
                links=links,
            ):
                yield
        finally:
            _RUN_ATTRIBUTES.reset(token)

    @contextmanager
    def chat(self, *, endpoint: ModelEndpoint, request: ChatRequest) -> Iterator[ChatSpan]:
        """A CLIENT span `chat {model}` around one model call."""
        attributes = chat_request_attributes(endpoint, request)
        session_id = dict(_RUN_ATTRIBUTES.get()).get(SESSION_ID)
        if session_id:
            attributes[GEN_AI_CONVERSATION_ID] = session_id
        with self._span(f"chat {endpoint.model}", SpanKind.CLIENT, attributes) as span:
            yield _ChatSpan(span)

    @contextmanager
    def tool(self, *, name: str, call_id: str, description: str | None = None) -> Iterator[ToolSpan]:
        """An INTERNAL span `execute_tool {name}` around one tool call the agent executes."""
        with self._span(f"execute_tool {name}", SpanKind.INTERNAL, tool_attributes(name, call_id, description)) as span:
            yield _ToolSpan(span)


def _current_span_context() -> trace_api.SpanContext | None:
    """The context of the span current when a step begins (an instrumented invocation's), if valid."""
    current = trace_api.get_current_span().get_span_context()
    return current if current.is_valid else None
