"""Native tool calls a server left in the text: models served without a tool-call parser write them raw.

Every model family writes its calls in a markup of its own (see `tool_call_markup` for the families read).
vLLM's and llama.cpp's tool parsers read these on the server; when the server has none, the native protocol
reads them here rather than taking the markup as the final answer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from stepwise.models.messages import Completion, ToolCall, ToolSpec
from stepwise.protocols.arguments import (
    coerce_arguments,
    decode_arguments,
    find_tool,
    parameter_type,
    unwrapped_arguments,
)
from stepwise.protocols.tool_call_lines import call_line_calls, recipient_calls
from stepwise.protocols.tool_call_markup import (
    Found,
    TextCall,
    bare_function_calls,
    call_object_calls,
    inline_function_calls,
    markup_value,
    pythonic_reply_calls,
    tagged_calls,
    without_markup_tokens,
)
from stepwise.protocols.tool_call_tokens import (
    deepseek_calls,
    function_gemma_calls,
    gemma4_calls,
    harmony_calls,
    kimi_calls,
    qwen_agent_calls,
)
from stepwise.protocols.tool_code import tool_code_calls

__all__ = ["TextCall", "TextCalls", "tool_calls_in_text", "with_written_calls"]


class TextCalls(NamedTuple):
    """The calls found in a reply's text, the text before them (the model's thought), and whether they were
    written with no markup of their own (a JSON call object, a Python list of calls)."""

    calls: list[TextCall]
    thought: str
    untagged: bool = False


# One reader per family of markup (tool_call_markup, tool_call_tokens); the one whose markup starts first wins.
_READERS = (
    tagged_calls,
    bare_function_calls,
    deepseek_calls,
    kimi_calls,
    harmony_calls,
    qwen_agent_calls,
    function_gemma_calls,
    gemma4_calls,
    tool_code_calls,
    call_line_calls,
    recipient_calls,
    pythonic_reply_calls,
    call_object_calls,
    inline_function_calls,
)


# Readers of calls written with no markup around them (or with markup in the middle of prose), which an answer
# may also hold as an example.
_UNTAGGED_READERS = (pythonic_reply_calls, call_object_calls, inline_function_calls)


def _find_calls(text: str) -> tuple[Found, bool] | None:
    found = [(reader(text), reader in _UNTAGGED_READERS) for reader in _READERS]
    readable = [(item, untagged) for item, untagged in found if item is not None and item.calls]
    return min(readable, key=lambda pair: pair[0].start) if readable else None


def tool_calls_in_text(text: str) -> TextCalls | None:
    """The calls written in `text` as a model's raw tool-call markup, or None when it has none."""
    text = without_markup_tokens(text)
    first = _find_calls(text)
    if first is None:
        return None
    found, untagged = first
    return TextCalls(found.calls, text[: found.start].strip(), untagged)


def with_written_calls(completion: Completion, tools: list[ToolSpec] | None = None) -> Completion:
    """The completion with the calls its text holds as native tool calls (its text then the thought before
    them), so that the stored turn and the tool results that follow it are the native pair providers expect.
    Arguments written as text between tags take the types of the `tools`' parameters, and a single plain value
    goes to the tool's one (required) parameter, else under ``input``. Arguments that cannot be read are kept under
    ``_raw`` for the parser to report."""
    if completion.tool_calls:
        return completion
    written = tool_calls_in_text(completion.content)
    if written is None or _example_in_prose(written, tools):
        return completion
    calls = []
    for position, call in enumerate(written.calls):
        tool = find_tool(tools, call.name)
        arguments = _typed(call, tool) if call.markup else decode_arguments(call.arguments)
        if arguments is None and _plain_value(call.arguments):
            # a single value written as the arguments (smolagents' text calls): the tool's one input
            arguments = unwrapped_arguments(coerce_arguments(call.arguments, tool), tool)
        raw = {"_raw": call.arguments if isinstance(call.arguments, str) else repr(call.arguments)}
        calls.append(
            ToolCall(id=f"call_{position}", name=call.name[:128], arguments=raw if arguments is None else arguments)
        )
    return completion.model_copy(update={"content": written.thought, "tool_calls": calls})


def _example_in_prose(written: TextCalls, tools: list[ToolSpec] | None) -> bool:
    """True for calls written with no markup after other text that name no tool the turn offered: an
    answer showing a JSON object or a call as an example, not a call. A reply that is nothing but such a call
    is one, whatever it names (the model is told when the tool does not exist)."""
    return (
        written.untagged
        and bool(written.thought)
        and tools is not None
        and all(find_tool(tools, call.name) is None for call in written.calls)
    )


def _plain_value(arguments: Any) -> bool:
    """True for arguments written as one plain value: a number, or text that is no broken JSON object or list."""
    if isinstance(arguments, int | float) and not isinstance(arguments, bool):
        return True
    return isinstance(arguments, str) and arguments.strip()[:1] not in ("{", "[", "")


def _typed(call: TextCall, tool: ToolSpec | None) -> dict[str, Any]:
    """The arguments of a call written in tag markup, each typed by its parameter's schema."""
    return {name: markup_value(text, _kind(tool, name)) for name, text in call.arguments.items()}


def _kind(tool: ToolSpec | None, name: str) -> str | None:
    """A parameter's JSON type: its ``type``, or the one type besides null of ``["string", "null"]`` or of an
    ``anyOf``/``oneOf`` (how Pydantic writes optional fields)."""
    kind = parameter_type(tool, name)
    if kind is not None:
        return kind
    properties = tool.parameters.get("properties") if tool is not None else None
    schema = properties.get(name) if isinstance(properties, dict) else None
    if not isinstance(schema, dict):
        return None
    options = schema.get("type") if isinstance(schema.get("type"), list) else schema.get("anyOf", schema.get("oneOf"))
    listed = options if isinstance(options, list) else []
    named = [option.get("type") if isinstance(option, dict) else option for option in listed]
    kinds = {kind for kind in named if isinstance(kind, str) and kind != "null"}
    return kinds.pop() if len(kinds) == 1 else None
