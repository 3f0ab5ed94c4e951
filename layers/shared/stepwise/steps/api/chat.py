"""The OpenAI-compatible facade: `POST /v1/chat/completions` starts a run and waits for its answer.

A Standard workflow is started and the run's META polled until it ends; an Express workflow runs
through `StartSyncExecution`. Either way the wait is bounded by `api.sync_timeout_seconds` (under API
Gateway's 29 s); past it the answer is 504 with the run id, and the run goes on to be polled.
With `stream: true` the answer is sent as server-sent `chat.completion.chunk` events ending with
`[DONE]`; API Gateway (REST) buffers a response, so there the events are sent together once the run
ends, while `stepwise serve` streams them as the run goes (`chat_stream.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from stepwise.config.guardrails import Guardrails
from stepwise.config.model import StepwiseConfig
from stepwise.models.chat_api import (
    AssistantMessage,
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChunkChoice,
    ChunkDelta,
    ChunkToolCall,
    CompletionTokensDetails,
    CompletionUsage,
    FinishReason,
    FunctionCall,
    JsonObjectFormat,
    JsonSchemaFormat,
    ModelCard,
    ModelList,
    NamedToolChoice,
    OutputToolCall,
    PromptTokensDetails,
)
from stepwise.models.messages import SamplingOptions, ToolSpec
from stepwise.models.run import RunMeta, RunOptions, RunUsage
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.problems import GatewayTimeout, NotFound, RunFailed
from stepwise.steps.api.run_endings import run_ending
from stepwise.steps.api.runs import (
    chat_messages,
    create_queued_run,
    plan_run,
    record_start_failure,
    start_queued_run,
)
from stepwise.steps.api.services import ApiServices
from stepwise.steps.api.started_runs import run_started
from stepwise.steps.executions import ExecutionStartFailed, SyncExecutionTimedOut
from stepwise.steps.guardrail_points import model_text_redactor, shown_guardrails
from stepwise.steps.runs import execution_input
from stepwise.store import ConversationStore

FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 1.0
_POLL_GROWTH = 1.5
_STREAM_PIECE = re.compile(r"\s*\S+\s*|\s+")


def stream_pieces(text: str) -> list[str]:
    """An answer cut into the pieces a stream sends it in: each word with the spaces around it."""
    pieces: list[str] = _STREAM_PIECE.findall(text)
    return pieces


def _poll_until_ended(services: ApiServices, meta: RunMeta, deadline: float) -> RunMeta:
    interval = FIRST_POLL_SECONDS
    while True:
        current = services.runtime.store.require_run(meta.run_id)
        remaining = deadline - services.monotonic()
        if current.is_terminal or remaining <= 0:
            return current
        services.sleep(min(interval, remaining))
        interval = min(interval * _POLL_GROWTH, MAX_POLL_SECONDS)


def _run_synchronously(services: ApiServices, meta: RunMeta) -> RunMeta:
    try:
        result = services.executions.start_sync(meta.run_id, execution_input(meta.run_id))
    except SyncExecutionTimedOut:
        return services.runtime.store.require_run(meta.run_id)
    except ExecutionStartFailed as exc:
        record_start_failure(services, meta, exc)
        raise
    final = services.runtime.store.require_run(meta.run_id)
    if not final.is_terminal:
        # The execution ended without recording the run's outcome (FormatFailure itself failed).
        raise RunFailed(
            f"the execution ended {result.status} without recording an answer",
            details={"run_id": meta.run_id, "status": result.status, "error": {"type": result.error}},
        )
    return final


def await_run(services: ApiServices, meta: RunMeta, *, deadline: float) -> RunMeta:
    """Start the run and wait for its end until `deadline` (on `services.monotonic`); 504 past it. A run
    that ended as it was created (its input blocked by a guardrail) is never started."""
    if meta.is_terminal:
        return meta
    if services.workflow_type == "EXPRESS":
        final = _run_synchronously(services, meta)
    else:
        start_queued_run(services, meta)
        final = _poll_until_ended(services, meta, deadline)
    if not final.is_terminal:
        timeout = services.config.api.sync_timeout_seconds
        raise GatewayTimeout(
            f"the run did not finish within {timeout:g} s; poll GET /v1/runs/{meta.run_id} for its answer",
            details={"run_id": meta.run_id, "status": final.status},
        )
    return final


def _tool_choice(request: ChatCompletionRequest) -> str | None:
    """The tool choice a request makes: `tool_choice`, or the legacy `function_call`, as a mode or a name."""
    choice = request.tool_choice if request.function_call is None else request.function_call
    if choice is None or isinstance(choice, str):
        return choice
    return choice.function.name if isinstance(choice, NamedToolChoice) else choice.name


def run_options(request: ChatCompletionRequest) -> RunOptions:
    """What the request sets over the profile: sampling, the structured answer, the client's tools.

    Legacy `functions` are the client's tools, one call at a time (a `function_call` answer holds one).
    """
    schema: dict[str, Any] | None = None
    if isinstance(request.response_format, JsonObjectFormat):
        schema = {"type": "object"}
    elif isinstance(request.response_format, JsonSchemaFormat):
        schema = request.response_format.json_schema.json_schema or {"type": "object"}
    legacy = request.functions is not None
    stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
    return RunOptions(
        temperature=request.temperature,
        max_tokens=request.max_completion_tokens or request.max_tokens,
        stop=stop,
        sampling=SamplingOptions(
            top_p=request.top_p,
            frequency_penalty=request.frequency_penalty,
            presence_penalty=request.presence_penalty,
            logit_bias=request.logit_bias,
            seed=request.seed,
            reasoning_effort=request.reasoning_effort,
        ),
        response_schema=schema,
        client_tools=[
            ToolSpec(
                name=function.name,
                description=function.description or "",
                parameters=function.parameters or {"type": "object", "properties": {}},
            )
            for function in request.client_functions
        ],
        tool_choice=_tool_choice(request),
        parallel_tool_calls=False if legacy else request.parallel_tool_calls,
        legacy_functions=legacy,
    )


def _client_tool_calls(steps: list[StepRecord], meta: RunMeta) -> list[OutputToolCall]:
    """The calls of the client's tools the run ended with, under ids unique to this run.

    Ids are renamed because the client's next request starts a new run whose calls would be numbered
    again; they stay under 40 characters, OpenAI's limit, as clients may replay them to OpenAI.
    """
    ending = [step.calls for step in steps if step.iteration == meta.iteration and step.kind == "parse" and step.calls]
    return [
        OutputToolCall(
            id=f"call_{meta.run_id[:20]}_{index}",
            function=FunctionCall(name=call["name"], arguments=json.dumps(call.get("arguments") or {})),
        )
        for index, call in enumerate(ending[0] if ending else [])
    ]


def _reasoning_content(steps: list[StepRecord]) -> str | None:
    """What the model thought over the run, as the stream sends it (`reasoning_content`); None if nothing."""
    thoughts = [step.thought for step in steps if step.kind == "reasoning" and step.thought]
    return "\n\n".join(thoughts) or None


def _answer_message(
    store: ConversationStore, meta: RunMeta, redact: Callable[[str], str] | None
) -> tuple[AssistantMessage, FinishReason]:
    steps = store.list_steps(meta.run_id)
    reasoning = _reasoning_content(steps)
    if reasoning is not None and redact is not None:
        # stored as the model wrote it (its blocks go back to the provider unchanged): screened as it is shown
        reasoning = redact(reasoning)
    if meta.stop_reason == "tool_calls":
        calls = _client_tool_calls(steps, meta)
        if meta.options is not None and meta.options.legacy_functions and calls:
            # A legacy client reads one `function_call`; its request asked for one call at a time.
            message = AssistantMessage(content=None, reasoning_content=reasoning, function_call=calls[0].function)
            return message, "function_call"
        return AssistantMessage(content=None, reasoning_content=reasoning, tool_calls=calls), "tool_calls"
    # A structured answer is the JSON itself, as OpenAI returns it for response_format.
    content = json.dumps(meta.output, ensure_ascii=False) if meta.output is not None else meta.answer or ""
    finish_reason: FinishReason = "stop" if meta.stop_reason == "final_answer" else "length"
    if meta.stop_reason == "guardrail":
        # OpenAI's own reason for an answer its content filter replaced
        finish_reason = "content_filter"
    return AssistantMessage(content=content, reasoning_content=reasoning), finish_reason


def completion_usage(usage: RunUsage) -> CompletionUsage:
    """A run's usage in OpenAI's shape: the cached and reasoning tokens in their details objects."""
    return CompletionUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        prompt_tokens_details=PromptTokensDetails(
            cached_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens
        ),
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=usage.reasoning_tokens),
    )


def chat_completion_of(
    store: ConversationStore, meta: RunMeta, *, model: str, created: int, guardrails: Guardrails | None = None
) -> ChatCompletion:
    """The ended run `meta` as a `chat.completion`, with how it ended (`stepwise`); an `ApiError` when it ended
    without an answer (`run_ending`: 429 when its provider's rate limit ended it, else 502). The model's
    reasoning passes the output's `pii` rules of `guardrails`, the profile's (`model_text_redactor`)."""
    ending = run_ending(meta)
    message, finish_reason = _answer_message(store, meta, model_text_redactor(guardrails))
    return ChatCompletion(
        id=f"chatcmpl-{meta.run_id}",
        created=created,
        model=model,
        choices=[ChatChoice(message=message, finish_reason=finish_reason)],
        usage=completion_usage(meta.usage),
        run_id=meta.run_id,
        stepwise=ending,
    )


def complete_chat(
    services: ApiServices, *, owner: str, request: ChatCompletionRequest, request_body: dict[str, Any]
) -> ChatCompletion:
    """Run the agent on the conversation and return its answer as a `chat.completion`.

    `model` selects the profile when it names one; otherwise intent routing (or the default) does.
    """
    deadline = services.monotonic() + services.config.api.sync_timeout_seconds
    meta = queue_chat_run(services, owner=owner, request=request, request_body=request_body)
    final = await_run(services, meta, deadline=deadline)
    return chat_completion_of(
        services.runtime.store,
        final,
        model=request.model,
        created=int(services.runtime.clock()),
        guardrails=shown_guardrails(services.runtime, final.profile),
    )


def queue_chat_run(
    services: ApiServices, *, owner: str, request: ChatCompletionRequest, request_body: dict[str, Any]
) -> RunMeta:
    """The conversation's run, stored as queued under the profile `model` names (or routing picks)."""
    plan = plan_run(
        services.config,
        owner=owner,
        messages=chat_messages(request.messages),
        request_body=request_body,
        profile=request.model if request.model in services.config.profiles else None,
        metadata=request.metadata,
        options=run_options(request),
    )
    meta = create_queued_run(services, plan)
    run_started(meta.run_id)
    return meta


def list_models(config: StepwiseConfig) -> ModelList:
    """`GET /v1/models`: every agent profile, by name, as an OpenAI model a request may name."""
    return ModelList(data=[_model_card(config, name) for name in sorted(config.profiles)])


def describe_model(config: StepwiseConfig, model_id: str) -> ModelCard:
    """`GET /v1/models/{model_id}`: the agent profile of that name, as an OpenAI model; 404 for another."""
    if model_id not in config.profiles:
        raise NotFound(f"no model (agent profile) named {model_id!r}; GET /v1/models lists them")
    return _model_card(config, model_id)


def _model_card(config: StepwiseConfig, name: str) -> ModelCard:
    return ModelCard(id=name, description=config.profiles[name].description)


def completion_events(completion: ChatCompletion, *, include_usage: bool = False, with_role: bool = True) -> str:
    """The completion as an OpenAI stream: role, reasoning, content pieces, calls, finish reason, usage if
    asked, `[DONE]`.

    `with_role=False` leaves out the opening role chunk and the reasoning, for a stream that already sent
    them (the live stream sends each reasoning step as it is stored).
    """
    choice = completion.choices[0]

    def chunk(choices: list[ChunkChoice], usage: CompletionUsage | None = None) -> str:
        event = ChatCompletionChunk(
            id=completion.id, created=completion.created, model=completion.model, choices=choices, usage=usage
        )
        return f"data: {event.model_dump_json(exclude_none=True)}\n\n"

    events = [chunk([ChunkChoice(delta=ChunkDelta(role="assistant", content=""))])] if with_role else []
    if with_role and choice.message.reasoning_content:
        events.append(chunk([ChunkChoice(delta=ChunkDelta(reasoning_content=choice.message.reasoning_content))]))
    events += [
        chunk([ChunkChoice(delta=ChunkDelta(content=piece))]) for piece in stream_pieces(choice.message.content or "")
    ]
    if choice.message.tool_calls:
        calls = [
            ChunkToolCall(index=index, id=call.id, function=call.function)
            for index, call in enumerate(choice.message.tool_calls)
        ]
        events.append(chunk([ChunkChoice(delta=ChunkDelta(tool_calls=calls))]))
    if choice.message.function_call:
        events.append(chunk([ChunkChoice(delta=ChunkDelta(function_call=choice.message.function_call))]))
    events.append(chunk([ChunkChoice(delta=ChunkDelta(), finish_reason=choice.finish_reason)]))
    if include_usage:
        events.append(chunk([], usage=completion.usage))
    events.append("data: [DONE]\n\n")
    return "".join(events)
