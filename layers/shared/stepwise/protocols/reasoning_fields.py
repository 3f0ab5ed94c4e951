"""Reasoning read from every place a provider's reply puts it, as `ReasoningBlock`s.

OpenAI-compatible servers put it beside the content: `reasoning_content` (DeepSeek, vLLM, SGLang, LM Studio,
DashScope), `reasoning` (vLLM's newer name, Ollama, Groq, OpenRouter), `reasoning_details` (OpenRouter, with
Claude's signatures and encrypted blocks), `thinking_blocks` (LiteLLM's Anthropic blocks) or `thinking`
(Ollama's own API). Content blocks carry it as Bedrock Converse `reasoningContent` (`reasoningText` with its
signature, or `redactedContent` bytes) or Anthropic `thinking` / `redacted_thinking` blocks. Read
defensively: anything malformed is skipped, never raised.
"""

from __future__ import annotations

import base64
from typing import Any

from stepwise.models.messages import ReasoningBlock

# vLLM sends the same text under both names while the old one is deprecated: one is read.
_TEXT_FIELDS = ("reasoning_content", "reasoning", "thinking")


def reasoning_from_message(message: dict[str, Any]) -> list[ReasoningBlock]:
    """The reasoning of an OpenAI-style assistant message (the structured fields win over plain text)."""
    for structured in (
        _openrouter_details(message.get("reasoning_details")),
        _anthropic_blocks(message.get("thinking_blocks")),
    ):
        if structured:
            return structured
    for field in _TEXT_FIELDS:
        text = message.get(field)
        if isinstance(text, str) and text.strip():
            return [ReasoningBlock(text=text.strip())]
    return []


def reasoning_from_blocks(blocks: Any) -> list[ReasoningBlock]:
    """The reasoning blocks among Bedrock Converse or Anthropic content blocks, in order."""
    if not isinstance(blocks, list):
        return []
    found: list[ReasoningBlock] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        converse = block.get("reasoningContent")
        if isinstance(converse, dict):
            found.extend(_converse_block(converse))
        else:
            found.extend(_anthropic_blocks([block]))
    return found


def reasoning_tokens(usage: Any) -> int:
    """`completion_tokens_details.reasoning_tokens` (or `output_tokens_details`) of an OpenAI-style usage."""
    if not isinstance(usage, dict):
        return 0
    for details_key in ("completion_tokens_details", "output_tokens_details"):
        details = usage.get(details_key)
        if isinstance(details, dict):
            count = details.get("reasoning_tokens")
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                return count
    return 0


def _converse_block(block: dict[str, Any]) -> list[ReasoningBlock]:
    text = block.get("reasoningText")
    if isinstance(text, dict) and isinstance(text.get("text"), str):
        signature = text.get("signature")
        return [ReasoningBlock(text=text["text"], signature=signature if isinstance(signature, str) else None)]
    redacted = block.get("redactedContent")
    if isinstance(redacted, bytes | bytearray):
        return [ReasoningBlock(redacted=base64.b64encode(bytes(redacted)).decode("ascii"))]
    if isinstance(redacted, str) and redacted:
        return [ReasoningBlock(redacted=redacted)]
    return []


def _anthropic_blocks(blocks: Any) -> list[ReasoningBlock]:
    if not isinstance(blocks, list):
        return []
    found: list[ReasoningBlock] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
            signature = block.get("signature")
            found.append(
                ReasoningBlock(text=block["thinking"], signature=signature if isinstance(signature, str) else None)
            )
        elif block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            found.append(ReasoningBlock(redacted=block["data"]))
    return found


def _openrouter_details(details: Any) -> list[ReasoningBlock]:
    if not isinstance(details, list):
        return []
    found: list[ReasoningBlock] = []
    for detail in details:
        if not isinstance(detail, dict):
            continue
        kind = detail.get("type")
        signature = detail.get("signature") if isinstance(detail.get("signature"), str) else None
        if kind == "reasoning.text" and isinstance(detail.get("text"), str):
            found.append(ReasoningBlock(text=detail["text"], signature=signature))
        elif kind == "reasoning.summary" and isinstance(detail.get("summary"), str):
            found.append(ReasoningBlock(text=detail["summary"]))
        elif kind == "reasoning.encrypted" and isinstance(detail.get("data"), str):
            found.append(ReasoningBlock(redacted=detail["data"]))
    return found
