"""Structured answers: the run's answer as JSON that matches the profile's `response_schema`.

Format asks the model once more, after the text answer is known: with the provider's JSON mode when the
model declares it, by forcing a call to one tool whose parameters are the schema when the model has
native tools (Bedrock has no JSON mode), else by asking for JSON only. The reply is validated with
jsonschema; an invalid reply is sent back once with the validation error. Every reply is stored before
it is used, so a retried Format reads it back instead of calling the model again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from stepwise.config.language import Language
from stepwise.config.llm import ModelCapabilities
from stepwise.errors import LLMPermanentError
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolSpec
from stepwise.models.run import RunMeta, StoredMessage
from stepwise.models.step_record import StepRecord
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.usage_estimate import estimated_usage_note
from stepwise.store.keys import observation_slot
from stepwise.telemetry.observability import logger, metrics

if TYPE_CHECKING:
    from stepwise.protocols.wording import OutputSentences

# The protocols' modules (their parsers' patterns) are imported by the functions below, which only a
# profile or request with a `response_schema` reaches: Format's import, and a run without one, skip them.

OutputMode = Literal["json_mode", "tool", "prompt"]

STRUCTURED_TOOL_NAME = "structured_answer"
MAX_ATTEMPTS = 2
# The replies are stored in the final iteration under observation indexes past any tool call's (a
# payload holds at most 64 calls), so they can never be mistaken for a tool's observation.
FIRST_ATTEMPT_INDEX = 64
_MAX_PROBLEM_CHARS = 500


@dataclass(frozen=True)
class StructuredOutput:
    """The validated JSON output, or why there is none; never both. `calls` are the trace steps of the
    formatting calls this attempt stored, whose usage the run's usage adds. A plain value between two of
    Format's functions, so no validator is built for it (its steps were validated as they were stored)."""

    output: dict[str, Any] | list[Any] | None = None
    error: str | None = None
    calls: list[StepRecord] = field(default_factory=list)


def split_formatting_replies(
    messages: list[StoredMessage], iteration: int
) -> tuple[list[StoredMessage], dict[int, str]]:
    """The conversation without the formatting replies stored in `iteration`, and those replies by attempt."""
    first_slot = observation_slot(FIRST_ATTEMPT_INDEX)
    conversation: list[StoredMessage] = []
    replies: dict[int, str] = {}
    for message in messages:
        if message.iteration == iteration and message.slot >= first_slot:
            replies[message.slot - first_slot] = message.content
        else:
            conversation.append(message)
    return conversation, replies


def output_mode(capabilities: ModelCapabilities, schema: dict[str, Any]) -> OutputMode:
    """How the model is asked for JSON: JSON mode, a forced tool call (object schemas only), or the prompt."""
    if capabilities.json_mode:
        return "json_mode"
    if capabilities.native_tools and schema.get("type") == "object":
        return "tool"
    return "prompt"


def read_json(text: str) -> Any | None:
    """The JSON value a reply holds: the whole reply (fenced or not), else the first object or array in it."""
    from stepwise.protocols.lenient_json import first_container, load_lenient

    whole = load_lenient(text)
    return whole if whole is not None else first_container(text)


def schema_violation(value: Any, schema: dict[str, Any]) -> str | None:
    """The most relevant way `value` breaks `schema`, as `at $.path: reason`; None when it is valid."""
    # imported here: only a profile with a response schema gets here, and Format imports this module always
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    from stepwise.patterns.schema_keywords import linear_validator

    validator_class = validator_for(schema)
    validator = linear_validator(schema, validator_class, format_checker=validator_class.FORMAT_CHECKER)
    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    path = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"at {path}: {error.message}"[:_MAX_PROBLEM_CHARS]


def reply_problem(reply: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """The JSON value of a reply and what is wrong with it (None when it is valid)."""
    value = read_json(reply)
    if value is None:
        return None, "the reply is not JSON"
    return value, schema_violation(value, schema)


def _render_for_formatting(
    history: list[StoredMessage], system_prompt: str, words: OutputSentences
) -> list[ChatMessage]:
    """The conversation as plain user/assistant turns: tool calls and results become text.

    Plain text keeps the request valid whatever the run's protocol was (a native call left without a
    result is refused by providers) and lets the formatting call offer its own tool.
    """
    from stepwise.protocols.base import append_merging_users

    messages = [ChatMessage(role="system", content=system_prompt)] if system_prompt.strip() else []
    for message in history:
        if message.role == "tool":
            text = words.tool_result.format(name=message.name or message.tool_call_id or "", content=message.content)
            append_merging_users(messages, ChatMessage(role="user", content=text))
        elif message.role == "assistant":
            calls = [
                words.tool_called.format(name=call.name, arguments=json.dumps(call.arguments, ensure_ascii=False))
                for call in message.tool_calls
            ]
            messages.append(ChatMessage(role="assistant", content="\n".join([message.content, *calls]).strip()))
        else:
            append_merging_users(messages, ChatMessage(role=message.role, content=message.content))
    return messages


def _instruction(mode: OutputMode, schema: dict[str, Any], answer: str, words: OutputSentences) -> str:
    if mode == "tool":
        return words.by_tool.format(tool=STRUCTURED_TOOL_NAME, answer=answer)
    return words.json_only.format(schema=json.dumps(schema, ensure_ascii=False), answer=answer)


def formatting_request(
    history: list[StoredMessage],
    *,
    system_prompt: str,
    schema: dict[str, Any],
    answer: str,
    mode: OutputMode,
    earlier: list[tuple[str, str]],
    language: Language = "en",
) -> ChatRequest:
    """The request for one formatting attempt, worded in the profile's `language`; `earlier` holds the
    rejected replies with their problems."""
    from stepwise.protocols.base import append_merging_users
    from stepwise.protocols.prompts import output_sentences_for

    words = output_sentences_for(language)
    messages = _render_for_formatting(history, system_prompt, words)
    append_merging_users(messages, ChatMessage(role="user", content=_instruction(mode, schema, answer, words)))
    for reply, problem in earlier:
        messages.append(ChatMessage(role="assistant", content=reply))
        messages.append(ChatMessage(role="user", content=words.retry.format(problem=problem)))
    if mode == "tool":
        tool = ToolSpec(name=STRUCTURED_TOOL_NAME, description=words.tool_description, parameters=schema)
        return ChatRequest(messages=messages, tools=[tool], tool_choice=STRUCTURED_TOOL_NAME)
    return ChatRequest(messages=messages, response_schema=schema if mode == "json_mode" else None)


def reply_text(completion: Completion) -> str:
    """The text to validate: the forced tool call's arguments as JSON, else the reply's text."""
    from stepwise.protocols.parallel_calls import RAW_ARGUMENTS_KEY

    for call in completion.tool_calls:
        if call.name == STRUCTURED_TOOL_NAME:
            if set(call.arguments) == {RAW_ARGUMENTS_KEY}:
                return str(call.arguments[RAW_ARGUMENTS_KEY])
            return json.dumps(call.arguments, ensure_ascii=False)
    return completion.content


def _ask_and_store(
    meta: RunMeta,
    iteration: int,
    attempt: int,
    request: ChatRequest,
    schema: dict[str, Any],
    mode: OutputMode,
    runtime: StepRuntime,
) -> tuple[str, StepRecord | None]:
    """Make one formatting call and store its reply with its trace step; the stored reply and its step."""
    from stepwise.protocols.think_blocks import without_reasoning

    started = time.perf_counter()
    started_at = runtime.clock()
    model = runtime.profile(meta.profile).model
    with runtime.spans.chat(endpoint=runtime.model_endpoint(model, profile=meta.profile), request=request) as span:
        completion = runtime.chat_model(model, profile=meta.profile).complete(request)
        span.completed(completion)
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    # A reasoning model's thinking is not the formatted answer (it is not kept: the run's answer is made).
    reply = reply_text(without_reasoning(completion))
    _, problem = reply_problem(reply, schema)
    index = FIRST_ATTEMPT_INDEX + attempt
    usage = completion.usage
    step = StepRecord(
        iteration=iteration,
        kind="format",
        n=attempt,
        started_at=started_at,
        note=f"structured output attempt {attempt + 1} ({mode}){estimated_usage_note(usage)}",
        ok=problem is None,
        error=problem,
        latency_ms=latency_ms,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens or None,
        usage_estimated=usage.unreliable is not None or None,
    )
    # The reply is stored as the assistant's message of its own slot, carrying its trace step (and so
    # its usage), once; a concurrent attempt's earlier reply wins.
    message = ChatMessage(role="assistant", content=reply)
    metrics.add_metric(name="StructuredOutputCalls", unit="Count", value=1)
    if runtime.store.record_message(meta, iteration, observation_slot(index), message, step):
        return reply, step
    # A concurrent attempt of this Format stored its reply first: that one is the reply of record.
    stored = runtime.store.stored_message(meta.run_id, iteration, observation_slot(index))
    return (stored[0].content, stored[1]) if stored is not None else (reply, step)


def produce_structured_output(
    meta: RunMeta, iteration: int, answer: str, messages: list[StoredMessage], runtime: StepRuntime
) -> StructuredOutput:
    """Ask for, validate and (once) correct the JSON answer; replies already stored are reused.

    `messages` is the run's conversation as Format read it (formatting replies of an earlier attempt
    included), so the conversation is not read again here.

    A provider that rejects the formatting call (`LLMPermanentError`) gives an `error`, not a failed
    run: the text answer stands. Transient errors propagate so the state machine retries Format.
    """
    profile = runtime.profile(meta.profile)
    # The request's response_format wins over the profile's schema.
    schema = meta.options.response_schema if meta.options and meta.options.response_schema else profile.response_schema
    if schema is None:
        return StructuredOutput()
    mode = output_mode(runtime.config.models[profile.model].capabilities, schema)
    history, stored = split_formatting_replies(messages, iteration)
    calls: list[StepRecord] = []
    earlier: list[tuple[str, str]] = []
    problem = "no reply"
    for attempt in range(MAX_ATTEMPTS):
        reply = stored.get(attempt)
        if reply is None:
            request = formatting_request(
                history,
                system_prompt=profile.system_prompt,
                schema=schema,
                answer=answer,
                mode=mode,
                earlier=earlier,
                language=profile.language,
            )
            try:
                reply, step = _ask_and_store(meta, iteration, attempt, request, schema, mode, runtime)
            except LLMPermanentError as exc:
                return StructuredOutput(error=f"the structured output call failed: {exc}", calls=calls)
            calls += [step] if step is not None else []
        value, found = reply_problem(reply, schema)
        if found is None:
            return StructuredOutput(output=value, calls=calls)
        problem = found
        earlier.append((reply, problem))
        logger.info("structured output invalid", extra={"run_id": meta.run_id, "attempt": attempt + 1})
    return StructuredOutput(error=f"no valid structured output after {MAX_ATTEMPTS} attempts: {problem}", calls=calls)
