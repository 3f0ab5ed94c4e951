"""An OpenAI-compatible chat completion body read as leniently as the OpenAI SDK reads it.

The SDK builds its response objects without validating them: its users get whatever the server sent, and
servers send numbers as strings, floats for counts, `null` where text belongs, parts of unexpected types.
So only the envelope is required here (a JSON object whose `choices` is a list, its first choice with a
`message` object; a `delta` or a legacy `text` stands in for one), and each value inside is read for what
it can mean, never refused:

- content: a string, null, or a list of parts: text parts (a null or missing `text` is no text), bare
  strings, and anything else skipped; with no text, a `refusal` (field or part) is the reply, else the
  transcript of a spoken reply (`audio.transcript`);
- tool calls: each object of `tool_calls` (anything else skipped; a custom tool call's free-form input is
  its arguments, `provider_responses.custom_call`), and a legacy `function_call`; a name
  that is not a string is no name (the call is dropped when it is repaired), arguments of any type are kept
  for the parser to read or report;
- `finish_reason` and `model`: strings, else none; reasoning: `stepwise.protocols.reasoning_fields`;
- usage: `stepwise.protocols.usage_fields.openai_usage`, which marks broken counts instead of failing.

A body without the envelope raises `NotACompletion` naming the field; the provider raises it as transient.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, model_validator

from stepwise.inputs.json_limits import load_json
from stepwise.inputs.validation_problems import describe_problems
from stepwise.llm.reply_repair import RawToolCall, repaired_completion
from stepwise.models.finish import EMPTY_REPLY, FILTERED_FINISH_REASONS
from stepwise.models.messages import Completion
from stepwise.protocols.provider_responses import custom_call, openai_refusal, openai_text, openai_transcript
from stepwise.protocols.reasoning_fields import reasoning_from_message
from stepwise.protocols.usage_fields import openai_usage

Shape = TypeVar("Shape", bound=BaseModel)


class NotACompletion(ValueError):
    """A 200 body that is not a chat completion; the message names the field and why (never its value)."""


class _Envelope(BaseModel):
    # An empty list is a reply with nothing in it (a filtered or empty generation), not a malformed body.
    choices: list[Any]
    id: Any = None
    model: Any = None
    usage: Any = None


class _Choice(BaseModel):
    message: dict[str, Any]
    finish_reason: Any = None

    @model_validator(mode="before")
    @classmethod
    def _message_or_stand_in(cls, choice: Any) -> Any:
        """A choice without `message`: its `delta` (a stream's shape, sent whole) or its legacy `text`; one
        whose finish reason says the provider's filter withheld it (Azure OpenAI's `content_filter`) is an empty
        message; any other choice without one is no completion."""
        if not isinstance(choice, dict) or "message" in choice:
            return choice
        if isinstance(choice.get("delta"), dict):
            return {**choice, "message": choice["delta"]}
        if isinstance(choice.get("text"), str):
            return {**choice, "message": {"content": choice["text"]}}
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason in FILTERED_FINISH_REASONS:
            return {**choice, "message": {}}
        return choice


def read_chat_completion(body: Any, *, model: str) -> Completion:
    """The completion in a `/chat/completions` body; `model` names it when the body does not.

    Raises `NotACompletion` when there is no envelope to read (no `choices` list, a first choice without a
    message); anything inside one is read, repaired or left for the parser to report.
    """
    envelope = _validated(_Envelope, body, "body")
    usage = openai_usage(envelope.usage)
    name = envelope.model if isinstance(envelope.model, str) and envelope.model else model
    response_id = envelope.id if isinstance(envelope.id, str) and envelope.id else None
    if not envelope.choices:
        # The parser answers an empty reply with a corrective observation; the run goes on.
        return repaired_completion("", [], usage=usage, model=name, finish_reason=EMPTY_REPLY, response_id=response_id)
    choice = _validated(_Choice, envelope.choices[0], "body.choices.0")
    message = choice.message
    return repaired_completion(
        openai_text(message.get("content")) or openai_refusal(message) or openai_transcript(message),
        _tool_calls(message),
        usage=usage,
        model=name,
        finish_reason=choice.finish_reason if isinstance(choice.finish_reason, str) else None,
        reasoning=reasoning_from_message(message),
        response_id=response_id,
    )


def _validated(shape: type[Shape], value: Any, where: str) -> Shape:
    try:
        return shape.model_validate(value)
    except ValidationError as exc:
        problems = describe_problems(exc, limit=3, top_level=where)
        if where != "body":
            problems = "; ".join(f"{where}.{problem}" for problem in problems.split("; "))
        raise NotACompletion(problems) from None


def _tool_calls(message: dict[str, Any]) -> list[RawToolCall]:
    """The message's tool calls (and a legacy `function_call`), before repair."""
    listed = message.get("tool_calls")
    calls = [call for call in listed if isinstance(call, dict)] if isinstance(listed, list) else []
    raw: list[RawToolCall] = []
    for call in calls:
        custom = custom_call(call)
        if custom is not None:
            name, arguments = custom
            raw.append(_tool_call(call.get("id"), {"name": name, "arguments": arguments}))
            continue
        function = call.get("function")
        raw.append(_tool_call(call.get("id"), function if isinstance(function, dict) else call))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        raw.append(_tool_call(None, legacy))
    return raw


def _tool_call(identifier: Any, function: dict[str, Any]) -> RawToolCall:
    """One call as a `RawToolCall` (ids and names are repaired afterwards).

    Arguments arrive as a JSON string. Ones that do not decode to a JSON object are kept as
    `{"_raw": "<text>"}` rather than failing the call, so the parser can tell the model what was wrong
    with what it wrote.
    """
    name = function.get("name")
    raw = function.get("arguments")
    arguments: dict[str, Any]
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        arguments = {}
    elif isinstance(raw, dict):
        arguments = raw
    elif isinstance(raw, str):
        try:
            decoded = load_json(raw, what="the tool call's arguments")
        except ValueError:  # not JSON, or past the JSON limits: the parser tells the model
            decoded = None
        arguments = decoded if isinstance(decoded, dict) else {"_raw": raw}
    else:
        arguments = {"_raw": json.dumps(raw, ensure_ascii=False)}
    if isinstance(identifier, int) and not isinstance(identifier, bool):
        identifier = str(identifier)
    return RawToolCall(
        id=identifier if isinstance(identifier, str) else None,
        name=name if isinstance(name, str) else "",
        arguments=arguments,
    )
