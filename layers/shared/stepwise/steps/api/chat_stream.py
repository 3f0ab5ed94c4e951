"""A streamed chat completion sent as the run goes: `POST /v1/chat/completions` with `stream: true`.

A front that can write a body over time (`stepwise serve`, and on AWS the streaming function behind API
Gateway's response streaming) marks the request (`STREAM_MARK` in `requestContext`, a key API Gateway
never sets; see `stepwise.streaming.routes`), the API function then only queues and starts the run and
answers 202 with a `ChatStreamStart`, and the front sends `chat_chunks`: the role chunk, one chunk per
step as the events route reads it (`events.follow_run`), then the answer, the finish chunk and `[DONE]`.
Unmarked (the buffered API function), the stream is built once the run has ended (`chat.completion_events`).

Steps travel in chunks whose `choices[0].delta` is empty, as OpenAI's own finish chunk is, with the
step under a non-standard top-level `stepwise_step` field: OpenAI clients ignore fields they do not
know and a naive `chunk.choices[0]` still finds a choice, while the assembled `content` stays the
answer alone (steps as `delta.content` text would mix the thoughts into the answer clients keep).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.models.api_responses import ErrorBody, ErrorResponse
from stepwise.models.chat_api import (
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatStreamStart,
    ChunkChoice,
    ChunkDelta,
)
from stepwise.steps.api.chat import chat_completion_of, completion_events, queue_chat_run
from stepwise.steps.api.events import KEEPALIVE_FRAME, STREAM_POLL_SECONDS, Keepalive, follow_run
from stepwise.steps.api.problems import ApiError
from stepwise.steps.api.runs import start_queued_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.api.stream_mark import is_marked
from stepwise.steps.guardrail_points import shown_guardrails, stream_screen
from stepwise.steps.runtime import StepRuntime

STEP_FIELD = "stepwise_step"


def streams_as_it_runs(event: APIGatewayProxyEvent, services: ApiServices) -> bool:
    """The front will stream this request itself; an Express run answers only at its end, so it buffers."""
    return is_marked(event.raw_event) and services.workflow_type != "EXPRESS"


def start_chat_stream(
    services: ApiServices, *, owner: str, request: ChatCompletionRequest, request_body: dict[str, Any]
) -> ChatStreamStart:
    """Queue and start the conversation's run without waiting for it; the front streams what follows."""
    meta = queue_chat_run(services, owner=owner, request=request, request_body=request_body)
    start_queued_run(services, meta)
    return ChatStreamStart(
        run_id=meta.run_id,
        model=request.model,
        created=int(services.runtime.clock()),
        include_usage=request.stream_options is not None and request.stream_options.include_usage,
        ignored_fields=request.ignored_fields,
        profile=meta.profile,
    )


def chat_chunks(
    runtime: StepRuntime,
    *,
    owner: str,
    start: ChatStreamStart,
    poll_seconds: float = STREAM_POLL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    keepalive: Keepalive | None = None,
) -> Iterator[bytes]:
    """The run's steps as `chat.completion.chunk` events as they are stored, then its answer and `[DONE]`.

    A run that ends without an answer ends the stream with an `{"error": ...}` event, as OpenAI does.
    While nothing is stored, a `: keep-alive` comment (OpenAI clients skip comment lines) keeps the
    connection from idling out.
    """
    idle = keepalive or Keepalive()
    completion_id = f"chatcmpl-{start.run_id}"
    # Each step leaves before Format checks the answer, which is sent only once the run ended, checked whole:
    # the profile's output rules screen the steps (`guardrail_points.stream_screen`).
    screen = stream_screen(runtime.profile(start.profile).guardrails if start.profile else None)

    def chunk(delta: ChunkDelta, step: dict[str, Any] | None = None) -> bytes:
        event = ChatCompletionChunk(
            id=completion_id, created=start.created, model=start.model, choices=[ChunkChoice(delta=delta)]
        ).model_dump(mode="json", exclude_none=True)
        if step is not None:
            event[STEP_FIELD] = step
        return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()

    yield chunk(ChunkDelta(role="assistant", content=""))
    for read in follow_run(
        runtime, owner=owner, run_reference=start.run_id, after=None, poll_seconds=poll_seconds, sleep=sleep
    ):
        if read.events:
            idle.sent()
        elif not read.done and idle.due():
            yield KEEPALIVE_FRAME
        for step in read.events:
            step = screen(step)
            thought = step.thought if step.kind == "reasoning" else None
            yield chunk(ChunkDelta(reasoning_content=thought), step.model_dump(mode="json", exclude_none=True))
    final = runtime.store.require_run(start.run_id)
    try:
        completion = chat_completion_of(
            runtime.store,
            final,
            model=start.model,
            created=start.created,
            guardrails=shown_guardrails(runtime, final.profile),
        )
    except ApiError as error:
        yield _error_event(error.type, error.message, error.details)
        return
    yield completion_events(completion, include_usage=start.include_usage, with_role=False).encode()


def _error_event(error_type: str, message: str, details: dict[str, Any]) -> bytes:
    """An `{"error": ...}` event and `[DONE]`: how a stream ends without an answer, as OpenAI ends one."""
    failure = ErrorResponse(error=ErrorBody(type=error_type, message=message, details=details))
    return f"data: {failure.model_dump_json()}\n\ndata: [DONE]\n\n".encode()


def stream_cut_short(run_id: str) -> bytes:
    """How a stream ends when the server stops before its run does: the run goes on when it starts again."""
    message = (
        f"the server stopped before the run ended; the run goes on when it starts again: poll GET /v1/runs/{run_id}"
    )
    return _error_event("unavailable", message, {"run_id": run_id})
