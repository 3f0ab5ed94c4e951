"""Reading a completion of the native tools API: tool calls win, text alone is the final answer."""

from __future__ import annotations

from typing import Any

from stepwise.models.decision import Decision, ParseError
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols.arguments import decode_arguments, final_answer, find_tool, tool_calls
from stepwise.protocols.text_tool_calls import with_written_calls
from stepwise.protocols.tool_call_markup import call_opening

# The OpenAI-compatible provider keeps an undecodable arguments string under this key so that the
# parser, not the provider, decides what to tell the model.
RAW_ARGUMENTS_KEY = "_raw"


def parse_native(completion: Completion, tools: list[ToolSpec] | None) -> Decision:
    """Tool calls (keeping the provider's ids; the text is the thought), else the text as final answer."""
    if not completion.tool_calls:
        if not completion.content.strip():
            return ParseError(message="Your reply was empty.")
        written = with_written_calls(completion, tools)
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
    for call in completion.tool_calls:
        arguments: dict[str, Any] | None = call.arguments
        if set(call.arguments) == {RAW_ARGUMENTS_KEY}:
            arguments = decode_arguments(call.arguments[RAW_ARGUMENTS_KEY])
        if arguments is None:
            return malformed_arguments(call.name)
        tool = find_tool(tools, call.name)
        calls.append((call.id, tool.name if tool else call.name, arguments))
    return tool_calls(calls, thought=completion.content)


def malformed_arguments(tool_name: str) -> ParseError:
    """The parse error for a native call whose arguments are not a JSON object."""
    return ParseError(
        message=f'The arguments of your call to tool "{tool_name[:128]}" are not a valid JSON object. '
        "Call it again with its arguments as one JSON object."
    )
