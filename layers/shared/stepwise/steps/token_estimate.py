"""Estimating a request's tokens without the model's tokenizer.

Written by hand because no tokenizer serves here: each provider counts with its own (OpenAI's o200k,
Anthropic's, Llama's, Qwen's...), and the libraries that ship one (tiktoken, tokenizers) fetch their
vocabulary files over the internet at first use, which neither this machine nor a Lambda function may do.

So the estimate is deliberately high: one token per 3 bytes of UTF-8. English prose runs about 4
characters (4 bytes) per token, so it is overestimated by a quarter; JSON, code and identifiers run
closer to 3; a CJK character is 3 bytes and 1 to 1.5 tokens, about right or somewhat under. It is only
ever used for what the provider has not counted yet: LLMCall starts from the prompt tokens the provider
reported for the previous call and scales the estimate of what was added since by how that call's count
compared with its estimate (`stepwise.steps.context_window`).
"""

from __future__ import annotations

import json
import math

from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolCall

BYTES_PER_TOKEN = 3
# OpenAI's chat format wraps each message in about 4 tokens (role and separators), and primes the reply
# with 3; other providers' formats are of the same order.
MESSAGE_OVERHEAD_TOKENS = 4
REQUEST_OVERHEAD_TOKENS = 3


def text_tokens(text: str) -> int:
    """Tokens of `text`, estimated high: its UTF-8 bytes over 3, rounded up."""
    return math.ceil(len(text.encode("utf-8", errors="replace")) / BYTES_PER_TOKEN)


def _calls_text(calls: list[ToolCall]) -> str:
    return json.dumps([call.model_dump() for call in calls], ensure_ascii=False) if calls else ""


def message_tokens(message: ChatMessage) -> int:
    """Tokens of one message: its text, its tool calls as JSON, its ids, and the format around it."""
    text = message.content + _calls_text(message.tool_calls) + (message.tool_call_id or "") + (message.name or "")
    return text_tokens(text) + MESSAGE_OVERHEAD_TOKENS


def request_tokens(request: ChatRequest) -> int:
    """Tokens of a whole request: its messages, the tools it offers (as their JSON schemas) and its stops."""
    tools = json.dumps([tool.model_dump() for tool in request.tools], ensure_ascii=False) if request.tools else ""
    return (
        sum(message_tokens(message) for message in request.messages)
        + text_tokens(tools + "".join(request.stop))
        + REQUEST_OVERHEAD_TOKENS
    )


def reply_tokens(completion: Completion) -> int:
    """Tokens of a model's reply: its text, what it thought, and its tool calls as JSON."""
    thought = "".join(block.text for block in completion.reasoning)
    return text_tokens(completion.content + thought + _calls_text(completion.tool_calls))


def tokens_of_chars(chars: int) -> int:
    """Tokens of `chars` characters of plain ASCII text (a tool result's cap, say)."""
    return math.ceil(chars / BYTES_PER_TOKEN)
