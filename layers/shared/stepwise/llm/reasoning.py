"""Thinking in a model request, as each provider documents it, and reasoning sent back where it must be.

A profile's `reasoning:` setting is resolved against the model catalog into a `ReasoningRequest` (see
`stepwise.config.reasoning.resolve_reasoning`); the providers call the shaping functions here, so that the
rules of each provider live in one place:

- Bedrock Claude: `thinking: {type: enabled, budget_tokens}` (Claude 4.5 and before) or `thinking: {type:
  adaptive}` with `output_config: {effort}` (4.6 and later), in `additionalModelRequestFields`; forced tool
  use and temperature/top_p/top_k changes are refused while thinking. Signed thinking blocks (and redacted
  ones) of an assistant turn that used tools go back with it, first, exactly as received, whether or not
  this request asked for thinking (a model that thinks by default signs them unasked). A model the catalog
  says thinks by default is asked nothing when no profile asks (its rules for thinking still apply), and
  `thinking: {type: disabled}` when a profile turns it off.
- Nova 2: `reasoningConfig: {type: enabled, maxReasoningEffort}`; at `high` the model sets its own length,
  so `maxTokens`, `temperature` and `topP` must be left out.
- OpenAI: `reasoning_effort`. DeepSeek: `thinking: {type}` and `reasoning_effort`; its `reasoning_content`
  must go back on tool-call turns. DashScope's Qwen3: `enable_thinking` and `thinking_budget`; Qwen3 on vLLM
  or SGLang: `chat_template_kwargs: {enable_thinking}`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from stepwise.models.messages import ChatMessage, ChatRequest, ReasoningPassBack, ReasoningRequest

_ANTHROPIC = ("anthropic_budget", "anthropic_adaptive")
_CONVERSE_SAMPLING = {"temperature": "temperature", "top_p": "topP", "stop": "stopSequences"}


def _thinking(request: ChatRequest) -> ReasoningRequest | None:
    reasoning = request.reasoning
    return reasoning if reasoning is not None and reasoning.enabled else None


def allowed_tool_choice(request: ChatRequest) -> str | None:
    """The request's tool_choice, with a forcing one relaxed to `auto` where thinking forbids forcing."""
    choice = request.tool_choice
    thinking = _thinking(request)
    if thinking is not None and thinking.control in _ANTHROPIC and choice not in (None, "auto", "none"):
        return "auto"
    return choice


def shape_openai_payload(payload: dict[str, Any], request: ChatRequest) -> None:
    """Add the thinking fields of an OpenAI-compatible request and drop the sampling fields they forbid."""
    reasoning = request.reasoning
    if reasoning is None:
        return
    payload.update(_openai_fields(reasoning))
    if reasoning.enabled:
        for field in reasoning.drop_sampling:
            payload.pop(field, None)


def _openai_fields(reasoning: ReasoningRequest) -> dict[str, Any]:
    if not reasoning.asked:
        return {}
    on, effort, budget = reasoning.enabled, reasoning.effort, reasoning.budget_tokens
    match reasoning.control:
        case "openai_effort" | "nova":
            return {"reasoning_effort": effort} if effort else {}
        case "deepseek_thinking":
            fields: dict[str, Any] = {"thinking": {"type": "enabled" if on else "disabled"}}
            return fields | ({"reasoning_effort": effort} if on and effort else {})
        case "qwen_enable_thinking":
            return {"enable_thinking": on} | ({"thinking_budget": budget} if on and budget else {})
        case "chat_template_kwargs":
            return {"chat_template_kwargs": {"enable_thinking": on}}
        case "anthropic_budget" | "anthropic_adaptive":
            return _anthropic_fields(reasoning)


def _anthropic_fields(reasoning: ReasoningRequest) -> dict[str, Any]:
    """Claude's `thinking` (and `output_config`), as Anthropic and Bedrock take them; when off, nothing, or
    `disabled` for a model that thinks by default; nothing for the model's own default thinking."""
    if not reasoning.asked:
        return {}
    if not reasoning.enabled:
        return {"thinking": {"type": "disabled"}} if reasoning.default_on else {}
    if reasoning.control == "anthropic_adaptive":
        effort = {"output_config": {"effort": reasoning.effort}} if reasoning.effort else {}
        return {"thinking": {"type": "adaptive"}} | effort
    return {"thinking": {"type": "enabled", "budget_tokens": reasoning.budget_tokens}}


def shape_converse_params(params: dict[str, Any], request: ChatRequest) -> None:
    """Add the thinking fields of a Converse request (`additionalModelRequestFields`) and drop what they
    forbid from `inferenceConfig`."""
    if request.reasoning is not None and request.reasoning.control in _ANTHROPIC:
        # turning off a model that thinks by default is a field too
        _add_converse_fields(params, _anthropic_fields(request.reasoning))
    reasoning = _thinking(request)
    if reasoning is None:
        return
    fields: dict[str, Any] = {}
    if reasoning.control == "nova" and reasoning.effort and reasoning.asked:
        fields = {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": reasoning.effort}}
    _add_converse_fields(params, fields)
    inference = params.get("inferenceConfig", {})
    dropped = [_CONVERSE_SAMPLING[field] for field in reasoning.drop_sampling if field in _CONVERSE_SAMPLING]
    if reasoning.control == "nova" and reasoning.effort == "high":
        dropped += ["maxTokens", "temperature", "topP"]
    for field in dropped:
        inference.pop(field, None)
    if "inferenceConfig" in params and not inference:
        del params["inferenceConfig"]


def _add_converse_fields(params: dict[str, Any], fields: dict[str, Any]) -> None:
    if fields:
        params["additionalModelRequestFields"] = {**params.get("additionalModelRequestFields", {}), **fields}


def openai_assistant_reasoning(message: ChatMessage, pass_back: ReasoningPassBack) -> dict[str, Any]:
    """The fields an OpenAI-compatible assistant message gets for its reasoning: only on a turn that called
    tools, only where the server requires it (elsewhere it would cost tokens, or be refused)."""
    text = "\n\n".join(block.text for block in message.reasoning if block.text)
    if pass_back == "none" or not message.tool_calls or not text:
        return {}
    if pass_back == "reasoning_content":
        return {"reasoning_content": text}
    return {"content": f"<think>\n{text}\n</think>\n\n{message.content}"}


def converse_reasoning_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """The Converse `reasoningContent` blocks of an assistant turn that used tools, as the model signed them.

    Claude refuses a tool result whose turn lost its thinking, and signs it whether thinking was asked for
    or is the model's default: every signed or redacted block goes back. Unsigned reasoning (read from `<think>` tags,
    or another provider's) is never sent, as Converse cannot verify it.
    """
    blocks: list[dict[str, Any]] = []
    for block in message.reasoning:
        if block.signature:
            blocks.append({"reasoningContent": {"reasoningText": {"text": block.text, "signature": block.signature}}})
        elif block.redacted:
            try:
                data = base64.b64decode(block.redacted, validate=True)
            except (binascii.Error, ValueError):
                continue
            blocks.append({"reasoningContent": {"redactedContent": data}})
    return blocks
