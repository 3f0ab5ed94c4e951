"""Reading a completion of the native tools API: tool calls win, text alone is the final answer."""

from __future__ import annotations

from typing import Any

from stepwise.models.decision import Decision, ParseError
from stepwise.models.finish import (
    FILTERED_FINISH_REASONS,
    MALFORMED_FINISH_REASONS,
    PAUSED_FINISH_REASONS,
    TRUNCATED_FINISH_REASONS,
)
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols.arguments import decode_arguments, final_answer, find_tool, tool_calls
from stepwise.protocols.parallel_calls import RAW_ARGUMENTS_KEY, with_unwrapped_calls
from stepwise.protocols.text_tool_calls import with_written_calls
from stepwise.protocols.tool_call_lines import nested_call
from stepwise.protocols.tool_call_markup import call_opening

# Enough of a provider's finish message to show the call it could not read, never a whole reply's worth.
_FINISH_MESSAGE_CHARS = 500


def parse_native(completion: Completion, tools: list[ToolSpec] | None) -> Decision:
    """Tool calls (keeping the provider's ids; the text is the thought), else the text as final answer; a turn the
    provider paused (Anthropic's `pause_turn`) is no answer yet, and an empty reply says why when it can."""
    if not completion.tool_calls:
        if completion.finish_reason in PAUSED_FINISH_REASONS:
            empty = "Your reply was empty: t" if not completion.content.strip() else "T"
            return ParseError(
                message=f"{empty}he provider paused your turn before it was complete (finish reason "
                f"{completion.finish_reason}). Continue where you left off."
            )
        if not completion.content.strip():
            return empty_reply(completion.finish_reason, completion.finish_message)
        written = with_written_calls(completion, tools)
        nested = nested_call(completion.content)
        if nested is not None:
            return ParseError(
                message=f'Your call passes the result of {nested[0][:128]}(...) to "{nested[1][:128]}" as an argument. '
                f"Call one tool at a time: call {nested[0][:128]} first, then use its result."
            )
        if written.tool_calls:
            return parse_native(written, tools)
        opening = call_opening(completion.content)
        if opening is not None:
            return ParseError(
                message=f'Your reply opens a tool call ("{opening[:40]}") that could not be read: it is cut off, '
                "unclosed or malformed. Write the call again, whole, or answer in plain text."
            )
        return final_answer(completion.content, "")
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for call in with_unwrapped_calls(completion, tools).tool_calls:
        arguments: dict[str, Any] | None = call.arguments
        if set(call.arguments) == {RAW_ARGUMENTS_KEY}:
            arguments = decode_arguments(call.arguments[RAW_ARGUMENTS_KEY])
        if arguments is None:
            return malformed_arguments(call.name)
        tool = find_tool(tools, call.name)
        calls.append((call.id, tool.name if tool else call.name, arguments))
    return tool_calls(calls, thought=completion.content)


def empty_reply(finish_reason: str | None, finish_message: str | None = None) -> ParseError:
    """The parse error for a reply with neither text nor calls, saying why when the provider's finish reason
    does: its filter withheld the reply, it could not read a call (quoting what the provider said of it), or the
    output cap cut it before anything."""
    if finish_reason in FILTERED_FINISH_REASONS:
        return ParseError(
            message=f"Your reply was empty: the model provider's content filter withheld it (finish reason "
            f"{finish_reason}). Answer differently, or say what you cannot help with."
        )
    if finish_reason in MALFORMED_FINISH_REASONS:
        return ParseError(
            message=f"Your reply was empty: your tool call was malformed and the provider could not read it "
            f"(finish reason {finish_reason}{_said(finish_message)}). Call the tool again with its arguments as one "
            "JSON object."
        )
    if finish_reason in TRUNCATED_FINISH_REASONS:
        return ParseError(
            message=f"Your reply was empty: the output limit was reached before any text or tool call (finish "
            f"reason {finish_reason}). Think less and reply sooner: call one tool or give a short answer."
        )
    return ParseError(message="Your reply was empty.")


def _said(finish_message: str | None) -> str:
    """The provider's own words on a stop, quoted after its finish reason, cut to what the model needs to see."""
    if finish_message is None:
        return ""
    shown = finish_message.strip()
    return f"; the provider said: {shown[:_FINISH_MESSAGE_CHARS]}{'…' if len(shown) > _FINISH_MESSAGE_CHARS else ''}"


def malformed_arguments(tool_name: str) -> ParseError:
    """The parse error for a native call whose arguments are not a JSON object."""
    return ParseError(
        message=f'The arguments of your call to tool "{tool_name[:128]}" are not a valid JSON object. '
        "Call it again with its arguments as one JSON object."
    )
