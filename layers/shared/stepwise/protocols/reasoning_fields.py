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
from collections.abc import Callable
from typing import Any

from stepwise.models.messages import ReasoningBlock

# vLLM sends the same text under both names while the old one is deprecated: one is read.
_TEXT_FIELDS = ("reasoning_content", "reasoning", "thinking")


def reasoning_from_message(message: dict[str, Any]) -> list[ReasoningBlock]:
    """The reasoning of an OpenAI-style assistant message (the structured fields win over plain text)."""
    for structured in (
        _read_each(message.get("reasoning_details"), _openrouter_detail),
        _read_each(message.get("thinking_blocks"), _anthropic_block),
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
    return _read_each(blocks, _content_block)


def _read_each(items: Any, read: Callable[[dict[str, Any]], ReasoningBlock | None]) -> list[ReasoningBlock]:
    """What `read` finds in each object of the JSON array `items`; anything else is skipped."""
    if not isinstance(items, list):
        return []
    found = (read(item) for item in items if isinstance(item, dict))
    return [block for block in found if block is not None]


def _string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _content_block(block: dict[str, Any]) -> ReasoningBlock | None:
    converse = block.get("reasoningContent")
    return _converse_block(converse) if isinstance(converse, dict) else _anthropic_block(block)


def _converse_block(block: dict[str, Any]) -> ReasoningBlock | None:
    text = block.get("reasoningText")
    if isinstance(text, dict) and isinstance(text.get("text"), str):
        return ReasoningBlock(text=text["text"], signature=_string_or_none(text.get("signature")))
    redacted = block.get("redactedContent")
    if isinstance(redacted, bytes | bytearray):
        return ReasoningBlock(redacted=base64.b64encode(bytes(redacted)).decode("ascii"))
    if isinstance(redacted, str) and redacted:
        return ReasoningBlock(redacted=redacted)
    return None


def _anthropic_block(block: dict[str, Any]) -> ReasoningBlock | None:
    if block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
        return ReasoningBlock(text=block["thinking"], signature=_string_or_none(block.get("signature")))
    if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
        return ReasoningBlock(redacted=block["data"])
    return None


def _openrouter_detail(detail: dict[str, Any]) -> ReasoningBlock | None:
    kind = detail.get("type")
    if kind == "reasoning.text" and isinstance(detail.get("text"), str):
        return ReasoningBlock(text=detail["text"], signature=_string_or_none(detail.get("signature")))
    if kind == "reasoning.summary" and isinstance(detail.get("summary"), str):
        return ReasoningBlock(text=detail["summary"])
    if kind == "reasoning.encrypted" and isinstance(detail.get("data"), str):
        return ReasoningBlock(redacted=detail["data"])
    return None
