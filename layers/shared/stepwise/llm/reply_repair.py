"""What a model server sends, made storable and usable before anything reads it.

Real servers send replies no run should fail on: tool calls sharing one id or having none, a call with an
empty or absurdly long tool name, lone surrogates or NUL characters in text or arguments, and replies far
longer than anything worth storing. Each provider reads its wire format into `RawToolCall`s and text,
then `repaired_completion` turns them into a `Completion` that can always be stored: the problems that
the model can correct (an unknown tool name, arguments over the cap) are left for a later step to answer
with an observation.

The limits of a reply are in `stepwise.models.reply_limits`: its text and unsigned reasoning are cut at
`MAX_REPLY_CHARS` with a marker; its calls' arguments are refused past `MAX_ARGUMENTS_CHARS`.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from stepwise.inputs.text_policy import clean_text, clean_value, count_unencodable
from stepwise.models.messages import Completion, ReasoningBlock, ToolCall, Usage
from stepwise.models.reply_limits import MAX_ARGUMENTS_CHARS, MAX_REPLY_CHARS, OVERSIZED_ARGUMENTS_KEY
from stepwise.protocols.parallel_calls import RAW_ARGUMENTS_KEY

MAX_ID_CHARS = 128
MAX_NAME_CHARS = 128


class RawToolCall(NamedTuple):
    """A tool call as a provider sent it, before repair: its id (may be missing), name and arguments."""

    id: str | None
    name: str
    arguments: dict[str, Any]


def capped_text(text: str, limit: int = MAX_REPLY_CHARS) -> str:
    """`text` cut at `limit` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[reply truncated: {len(text) - limit} more characters were not kept]"


def repaired_text(text: str) -> tuple[str, int]:
    """Model text with unencodable characters replaced, capped at `MAX_REPLY_CHARS`, and how many were replaced.

    The text may be the user's answer, so it carries only the visible U+FFFD; the count goes to the
    trace (the model step's note), which says what was replaced.
    """
    replaced = count_unencodable(text)
    return capped_text(clean_text(text) if replaced else text), replaced


def repaired_calls(calls: list[RawToolCall]) -> list[ToolCall]:
    """Tool calls that can be stored and answered.

    A call with an empty name is dropped (there is nothing to call, and the other calls may be fine). Each
    call gets an id of its own: a missing, oversized or repeated id is replaced by a positional one, as a
    tool result must name exactly one call. Names are cleaned and cut to the longest a call may have; the
    tool step then answers an unknown name with an observation the model can act on. Arguments that would
    take the reply's total past `MAX_ARGUMENTS_CHARS` are replaced by `{OVERSIZED_ARGUMENTS_KEY: <their
    size>}`, which Parse answers with an observation naming the limit (`steps/reply_problems.py`).
    """
    repaired: list[ToolCall] = []
    seen: set[str] = set()
    arguments_chars = 0
    for position, call in enumerate(calls):
        name = clean_text(call.name).strip()
        if not name:
            continue
        size = _json_chars(call.arguments)
        if arguments_chars + size > MAX_ARGUMENTS_CHARS:
            arguments: dict[str, Any] = {OVERSIZED_ARGUMENTS_KEY: size}
        else:
            arguments_chars += size
            arguments, _ = clean_value(call.arguments)
        identifier = clean_text(call.id or "").strip()
        if not identifier or len(identifier) > MAX_ID_CHARS or identifier in seen:
            identifier = _free_id(position, seen)
        seen.add(identifier)
        repaired.append(ToolCall(id=identifier, name=name[:MAX_NAME_CHARS], arguments=arguments))
    return repaired


def _json_chars(arguments: dict[str, Any]) -> int:
    """How many characters `arguments` take as compact JSON text: the text as sent when the provider kept it
    undecoded, else the object encoded as a provider sends it."""
    raw = arguments.get(RAW_ARGUMENTS_KEY) if len(arguments) == 1 else None
    if isinstance(raw, str):
        return len(raw)
    return len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str))


def _free_id(position: int, taken: set[str]) -> str:
    """A positional call id not yet used in this reply."""
    candidate = f"call_{position}"
    suffix = 0
    while candidate in taken:
        suffix += 1
        candidate = f"call_{position}_{suffix}"
    return candidate


def repaired_completion(
    text: str,
    calls: list[RawToolCall],
    *,
    usage: Usage,
    model: str,
    finish_reason: str | None,
    reasoning: list[ReasoningBlock] | None = None,
    server_tools: list[str] | None = None,
    response_id: str | None = None,
) -> Completion:
    """A provider's reply as a `Completion` whose text, calls and reasoning can always be stored and shown.

    Signed reasoning is kept as sent (the provider checks its signature when it comes back); other reasoning
    text is repaired like the reply. `server_tools` names the tools the provider ran itself.
    """
    content, replaced = repaired_text(text)
    return Completion(
        content=content,
        replaced_characters=replaced,
        tool_calls=repaired_calls(calls),
        reasoning=[_repaired_reasoning(block) for block in reasoning or []],
        usage=usage,
        model=model,
        finish_reason=finish_reason,
        server_tools=server_tools or [],
        response_id=response_id,
    )


def _repaired_reasoning(block: ReasoningBlock) -> ReasoningBlock:
    if block.signed:
        return block
    return block.model_copy(update={"text": repaired_text(block.text)[0]})
