"""What a model server sends, made storable and usable before anything reads it.

Real servers send replies no run should fail on: tool calls sharing one id or having none, a call with an
empty or absurdly long tool name, lone surrogates or NUL characters in text or arguments, and replies far
longer than anything worth storing. Each provider reads its wire format into `RawToolCall`s and text,
then `repaired_completion` turns them into a `Completion` that can always be stored: the problems that
the model can correct (an unknown tool name) are left for the tool step to answer with an observation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from stepwise.inputs.text_policy import clean_text, clean_value, count_unencodable
from stepwise.models.messages import Completion, ToolCall, Usage

# Far beyond any useful answer or action, far below what a store item holds (DynamoDB: 400 KB).
MAX_REPLY_CHARS = 60_000
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
    tool step then answers an unknown name with an observation the model can act on.
    """
    repaired: list[ToolCall] = []
    seen: set[str] = set()
    for position, call in enumerate(calls):
        name = clean_text(call.name).strip()
        if not name:
            continue
        arguments, _ = clean_value(call.arguments)
        identifier = clean_text(call.id or "").strip()
        if not identifier or len(identifier) > MAX_ID_CHARS or identifier in seen:
            identifier = _free_id(position, seen)
        seen.add(identifier)
        repaired.append(ToolCall(id=identifier, name=name[:MAX_NAME_CHARS], arguments=arguments))
    return repaired


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
) -> Completion:
    """A provider's reply as a `Completion` whose text and calls can always be stored and shown."""
    content, replaced = repaired_text(text)
    return Completion(
        content=content,
        replaced_characters=replaced,
        tool_calls=repaired_calls(calls),
        usage=usage,
        model=model,
        finish_reason=finish_reason,
    )
