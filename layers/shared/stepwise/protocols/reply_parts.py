"""The parts every provider response is read into (text, raw calls, reasoning), built into one `Completion`."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from stepwise.models.decision import ParseError
from stepwise.models.messages import Completion, ReasoningBlock, ToolCall
from stepwise.protocols.arguments import decode_arguments
from stepwise.protocols.native import malformed_arguments

# (provider id or None, name, raw arguments: an object or a JSON string)
RawCall = tuple[Any, Any, Any]


def build_completion(
    content: str, calls: list[RawCall], call_id_prefix: str, reasoning: list[ReasoningBlock]
) -> Completion | ParseError:
    """Build the completion; a call without a name is dropped (as trpc-agent does), unreadable arguments
    are a parse error.
    """
    tool_calls: list[ToolCall] = []
    for position, (call_id, name, raw_arguments) in enumerate(calls):
        if not isinstance(name, str) or not name.strip():
            continue
        arguments = decode_arguments(raw_arguments)
        if arguments is None:
            return malformed_arguments(name)
        identifier = call_id if isinstance(call_id, str) and call_id else f"{call_id_prefix}_{position}"
        try:
            tool_calls.append(ToolCall(id=identifier, name=name.strip(), arguments=arguments))
        except ValidationError:
            return ParseError(message=f'Your call to tool "{name[:128]}" has an invalid id or name.')
    return Completion(content=content, tool_calls=tool_calls, reasoning=reasoning)


def part_texts(parts: Any) -> list[str]:
    """The texts of a list of ``{"type": ..., "text": ...}`` parts (reasoning summaries and contents)."""
    found = [part.get("text") for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
    return [text for text in found if isinstance(text, str) and text.strip()]
