"""Native tool calls as the model meant them: the calls inside OpenAI's parallel wrapper, each a call of its own.

Apart from the native parser (`stepwise.protocols.native`) so that LLMCall, which stores every reply this way,
loads neither the parser nor its decisions.
"""

from __future__ import annotations

from stepwise.models.messages import Completion, ToolCall, ToolSpec
from stepwise.protocols.arguments import decode_arguments, find_tool

# The OpenAI-compatible provider keeps an undecodable arguments string under this key so that the
# parser, not the provider, decides what to tell the model.
RAW_ARGUMENTS_KEY = "_raw"
# OpenAI's internal wrapper of parallel calls, as its models sometimes write it (the Responses API's name is the last).
_PARALLEL_WRAPPERS = ("multi_tool_use.parallel", "parallel")


def with_unwrapped_calls(completion: Completion, tools: list[ToolSpec] | None) -> Completion:
    """The completion with the calls inside OpenAI's parallel wrapper as calls of their own.

    OpenAI's models sometimes write parallel calls as one call of ``multi_tool_use.parallel`` (``parallel`` in the
    Responses API) whose ``tool_uses`` name each tool as ``functions.<name>`` with its ``parameters``. No request
    offers that tool: each call inside it is one to make (as the AI SDK expands it), stored as such so that each
    tool result answers a call of the turn. A tool of that name that is offered is called as any other.
    """
    if not any(call.name in _PARALLEL_WRAPPERS for call in completion.tool_calls):
        return completion
    calls: list[ToolCall] = []
    for call in completion.tool_calls:
        wrapped = None if find_tool(tools, call.name) else _wrapped_calls(call)
        calls.extend(wrapped or [call])
    return completion.model_copy(update={"tool_calls": calls})


def _wrapped_calls(call: ToolCall) -> list[ToolCall] | None:
    """The calls inside a parallel wrapper, or None when `call` is no such wrapper."""
    arguments = call.arguments
    if set(arguments) == {RAW_ARGUMENTS_KEY}:
        arguments = decode_arguments(arguments[RAW_ARGUMENTS_KEY]) or {}
    uses = arguments.get("tool_uses")
    if call.name not in _PARALLEL_WRAPPERS or not isinstance(uses, list) or not uses:
        return None
    calls = []
    for index, use in enumerate(uses):
        recipient = use.get("recipient_name") if isinstance(use, dict) else None
        parameters = use.get("parameters", {}) if isinstance(use, dict) else None
        if not isinstance(recipient, str) or not isinstance(parameters, dict):
            return None
        name = recipient.removeprefix("functions.")[:128]
        calls.append(ToolCall(id=f"{call.id}_{index}", name=name, arguments=parameters))
    return calls
