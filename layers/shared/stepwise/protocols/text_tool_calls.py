"""Native tool calls a server left in the text: models served without a tool-call parser write them raw.

Qwen, Hermes and their fine-tunes write ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
Qwen3-Coder writes ``<tool_call><function=name><parameter=p>value</parameter></function></tool_call>``;
Mistral writes ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]``. vLLM's and llama.cpp's tool parsers read
these on the server; when the server has none, the native protocol reads them here rather than taking the
markup as the final answer.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from stepwise.models.messages import Completion, ToolCall
from stepwise.protocols.arguments import decode_arguments
from stepwise.protocols.lenient_json import load_lenient, scan_value

_HERMES = re.compile(r"<tool_call>(?P<body>.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION = re.compile(r"<function=(?P<name>[^>\s]+)>(?P<body>.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=(?P<name>[^>\s]+)>(?P<value>.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"


class TextCall(NamedTuple):
    """One call read from text: its name and arguments (None when they could not be read)."""

    name: str
    arguments: Any


class TextCalls(NamedTuple):
    """The calls found in a reply's text, and the text before them (the model's thought)."""

    calls: list[TextCall]
    thought: str


def tool_calls_in_text(text: str) -> TextCalls | None:
    """The calls written in `text` as a model's raw tool-call markup, or None when it has none."""
    start = text.find("<tool_call>")
    if start >= 0:
        read = [_hermes_call(match.group("body")) for match in _HERMES.finditer(text, start)]
    else:
        start = text.find(_MISTRAL)
        if start < 0:
            return None
        value = scan_value(text, start + len(_MISTRAL))
        items = value[0] if value is not None else None
        read = [_json_call(item) for item in (items if isinstance(items, list) else [items])]
    found = [call for call in read if call is not None]
    return TextCalls(found, text[:start].strip()) if found else None


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


def _hermes_call(body: str) -> TextCall | None:
    function = _FUNCTION.search(body)
    if function is not None:
        arguments = {
            match.group("name"): _parameter_value(match.group("value"))
            for match in _PARAMETER.finditer(function.group("body"))
        }
        return TextCall(function.group("name"), arguments)
    return _json_call(load_lenient(body))


def _json_call(value: Any) -> TextCall | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    return TextCall(value["name"], arguments)


def _parameter_value(raw: str) -> Any:
    """A Qwen3-Coder parameter: JSON when it reads as JSON (numbers, objects), else the text."""
    text = raw.strip()
    decoded = load_lenient(text)
    return text if decoded is None or isinstance(decoded, str) else decoded
