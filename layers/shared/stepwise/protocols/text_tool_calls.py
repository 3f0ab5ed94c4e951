"""Native tool calls a server left in the text: models served without a tool-call parser write them raw.

Every model family writes its calls in a markup of its own (see `tool_call_markup` for the families read).
vLLM's and llama.cpp's tool parsers read these on the server; when the server has none, the native protocol
reads them here rather than taking the markup as the final answer.
"""

from __future__ import annotations

from typing import NamedTuple

from stepwise.models.messages import Completion, ToolCall
from stepwise.protocols.arguments import decode_arguments
from stepwise.protocols.tool_call_markup import TextCall, find_calls

__all__ = ["TextCall", "TextCalls", "tool_calls_in_text", "with_written_calls"]


class TextCalls(NamedTuple):
    """The calls found in a reply's text, and the text before them (the model's thought)."""

    calls: list[TextCall]
    thought: str


def tool_calls_in_text(text: str) -> TextCalls | None:
    """The calls written in `text` as a model's raw tool-call markup, or None when it has none."""
    found = find_calls(text)
    if found is None:
        return None
    return TextCalls(found.calls, text[: found.start].strip())


def with_written_calls(completion: Completion) -> Completion:
    """The completion with the calls its text holds as native tool calls (its text then the thought before
    them), so that the stored turn and the tool results that follow it are the native pair providers expect.
    Arguments that cannot be read are kept under ``_raw`` for the parser to report."""
    if completion.tool_calls:
        return completion
    written = tool_calls_in_text(completion.content)
    if written is None:
        return completion
    calls = []
    for position, call in enumerate(written.calls):
        arguments = decode_arguments(call.arguments)
        raw = {"_raw": call.arguments if isinstance(call.arguments, str) else repr(call.arguments)}
        calls.append(
            ToolCall(id=f"call_{position}", name=call.name[:128], arguments=raw if arguments is None else arguments)
        )
    return completion.model_copy(update={"content": written.thought, "tool_calls": calls})
