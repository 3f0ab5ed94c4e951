"""Prompt-cache checkpoints: where a request marks the stable prefix a provider may cache.

An agent's calls share a long prefix (tools, system prompt, the conversation so far), so each call after
the first can read it from the provider's cache at a tenth of the input price. Checkpoints go after the
tools, after the system prompt and at the end of the conversation, as the model's catalog entry allows;
a prefix shorter than the model's minimum gets none (Bedrock ignores it and Anthropic refuses it).
No library shapes these blocks for raw Converse or Chat Completions requests, hence this module.
"""

from __future__ import annotations

import json
from typing import Any

from stepwise.config.model_catalog import PromptCache

_CHARS_PER_TOKEN = 4
CACHE_POINT: dict[str, Any] = {"cachePoint": {"type": "default"}}
_EPHEMERAL = {"type": "ephemeral"}


def _tokens(value: Any) -> int:
    """A rough token count (four characters a token) of a JSON-able value: only compared with a minimum."""
    return len(json.dumps(value, ensure_ascii=False)) // _CHARS_PER_TOKEN


def with_cache_points(params: dict[str, Any], cache: PromptCache) -> dict[str, Any]:
    """A Converse request with `cachePoint` blocks after its tools, system prompt and conversation.

    Checkpoints are placed from the start of the prompt (tools, then system, then messages) while the
    prefix they close reaches `cache.min_tokens`, and at most `cache.max_checkpoints` of them.
    """
    shaped = dict(params)
    budget = cache.max_checkpoints
    prefix = 0
    tool_config = shaped.get("toolConfig")
    if tool_config and "tools" in cache.fields:
        prefix += _tokens(tool_config["tools"])
        if budget and prefix >= cache.min_tokens:
            shaped["toolConfig"] = {**tool_config, "tools": [*tool_config["tools"], CACHE_POINT]}
            budget -= 1
    if shaped.get("system") and "system" in cache.fields:
        prefix += _tokens(shaped["system"])
        if budget and prefix >= cache.min_tokens:
            shaped["system"] = [*shaped["system"], CACHE_POINT]
            budget -= 1
    messages = shaped.get("messages") or []
    if messages and "messages" in cache.fields:
        prefix += _tokens(messages)
        if budget and prefix >= cache.min_tokens:
            last = messages[-1]
            shaped["messages"] = [*messages[:-1], {**last, "content": [*last["content"], CACHE_POINT]}]
    return shaped


def cache_control_messages(messages: list[dict[str, Any]], cache: PromptCache) -> list[dict[str, Any]]:
    """Chat messages with Anthropic's `cache_control` on the system prompt and on the newest message.

    Anthropic caches tools, system and messages in that order, so a mark on the system prompt covers the
    tools too; the mark on the newest message lets the next call read the whole conversation so far.
    """
    if not cache.max_checkpoints or _tokens(messages) < cache.min_tokens:
        return messages
    marked = list(messages)
    targets = [index for index, message in enumerate(marked) if message["role"] == "system"][-1:]
    if len(marked) - 1 not in targets:
        targets.append(len(marked) - 1)
    for index in targets[: cache.max_checkpoints]:
        message = marked[index]
        if isinstance(message.get("content"), str) and message["content"]:
            part = {"type": "text", "text": message["content"], "cache_control": _EPHEMERAL}
            marked[index] = {**message, "content": [part]}
    return marked
