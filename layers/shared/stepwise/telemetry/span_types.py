"""What a span is told, and what opens spans: the interface every span backend implements
(`spans.NoSpans`, `otel_spans.OtelSpans`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from stepwise.llm.endpoints import ModelEndpoint
    from stepwise.models.messages import ChatRequest, Completion
    from stepwise.models.trace_context import TraceContext
    from stepwise.tools.observation import ToolObservation


class ChatSpan(Protocol):
    """The span of one model call, told what the model answered."""

    def completed(self, completion: Completion) -> None:
        """Record the response's model, token usage and finish reason."""
        ...


class ToolSpan(Protocol):
    """The span of one tool call, told how it went."""

    def observed(self, observation: ToolObservation) -> None:
        """Record whether the call succeeded."""
        ...


class RequestSpan(Protocol):
    """The span of one HTTP request to the API, told how it was answered."""

    def responded(self, status_code: int) -> None:
        """Record the response's status code (a 5xx marks the span as an error)."""
        ...


class GenAiSpans(Protocol):
    """Opens the spans of a run: its request, its start, each step, and the model and tool calls in them."""

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
    ) -> AbstractContextManager[RequestSpan]:
        """A SERVER span `{method} {route}` around one API request, continuing the caller's trace when its
        headers carry one (`traceparent`)."""
        ...

    def command(self, name: str) -> AbstractContextManager[None]:
        """A span around a local command that starts a run (`stepwise run`): the root of its trace."""
        ...

    def run_started(
        self, *, run_id: str, profile: str, session_id: str | None, endpoint: ModelEndpoint
    ) -> TraceContext | None:
        """Record the `invoke_agent {profile}` span of a run being created, a child of the current span
        (the request's); its context, which the run's steps descend from, or None when nothing is traced."""
        ...

    def step(
        self, name: str, *, run_id: str, trace: TraceContext | None, started_ns: int | None = None
    ) -> AbstractContextManager[None]:
        """A span for one state's work on a run (`LLMCall`, `ToolInvoke`, ...), in the run's trace; the
        model and tool spans opened inside it are its children. `started_ns` backdates its start (the
        first IterationGuard learns the trace from what it read)."""
        ...

    def chat(self, *, endpoint: ModelEndpoint, request: ChatRequest) -> AbstractContextManager[ChatSpan]:
        """A `chat {model}` span around one model call to `endpoint` (its provider as configured: openai,
        bedrock, scripted), with `request`'s settings (never its messages); an exception ends it as an error."""
        ...

    def tool(self, *, name: str, call_id: str, description: str | None = None) -> AbstractContextManager[ToolSpan]:
        """An `execute_tool {name}` span around one call of a tool the agent executes (`description` from its
        spec); an exception ends it as an error."""
        ...
