"""Gemma 3's tool calls: Python calls in a fence labelled ``tool_code``.

Gemma 3 has no tool-call tokens; its function-calling guide has the model write the call as Python in a
```` ```tool_code ```` fence, and served as it is (Ollama, vLLM or a gateway without a tool parser) that is what comes
back: ``search(query="x")``, often wrapped in ``print(...)`` or assigned to a name that is printed next. The fence
label is the markup, so a block of these calls is read as calls wherever it stands; a block holding any other
Python (an import, arithmetic) is code, not calls, and the reply stays an answer.
"""

from __future__ import annotations

import re

from stepwise.protocols.call_syntax import parse_call_at
from stepwise.protocols.tool_call_markup import Found, TextCall

_OPENING = re.compile(r"```tool_code[ \t]*+\r?\n")
_ASSIGNED = re.compile(r"[A-Za-z_]\w*+[ \t]*+=(?!=)[ \t]*+")
_PRINTED = re.compile(r"print[ \t]*+\([ \t]*+")
# print(name) on its own: showing the result a line before assigned, no call of its own.
_PRINTED_NAME = re.compile(r"print[ \t]*+\([ \t]*+[A-Za-z_]\w*+[ \t]*+\)")
_NAME = re.compile(r"[A-Za-z_][\w.]*+\Z")


def tool_code_calls(text: str) -> Found | None:
    """The calls in the ``tool_code`` fences of a reply (the closing fence may be cut off), or None."""
    start: int | None = None
    calls: list[TextCall] = []
    for opening in _OPENING.finditer(text):
        closing = text.find("```", opening.end())
        read = _block_calls(text[opening.end() : closing if closing >= 0 else len(text)])
        if read and start is None:
            start = opening.start()
        calls.extend(read)
    return Found(start, calls) if start is not None else None


def _block_calls(body: str) -> list[TextCall]:
    """Every statement of a block as a call, or [] when one of them is something else."""
    calls: list[TextCall] = []
    position = _next_statement(body, 0)
    while position < len(body):
        printed_name = _PRINTED_NAME.match(body, position)
        if printed_name is not None:
            position = _next_statement(body, printed_name.end())
            continue
        assigned = _ASSIGNED.match(body, position)
        position = assigned.end() if assigned else position
        printed = _PRINTED.match(body, position)
        position = printed.end() if printed else position
        read = parse_call_at(body, position)
        if read is None or not _NAME.match(read[0].name):
            return []
        call, position = read
        if printed:
            position = _skip_spaces(body, position)
            if not body.startswith(")", position):
                return []
            position += 1
        calls.append(_text_call(call.name, call.positional, call.named))
        position = _next_statement(body, position)
    return calls


def _text_call(name: str, positional: list[object], named: dict[str, object]) -> TextCall:
    """A call's arguments: its named ones, or its one positional value (the tool's one parameter takes it)."""
    if len(positional) == 1 and not named:
        return TextCall(name, positional[0])
    return TextCall(name, {**{f"arg{index}": value for index, value in enumerate(positional)}, **named})


def _skip_spaces(body: str, position: int) -> int:
    while position < len(body) and body[position] in " \t":
        position += 1
    return position


def _next_statement(body: str, position: int) -> int:
    """The start of the next statement: past spaces, line breaks, semicolons and comment lines."""
    while position < len(body):
        if body[position].isspace() or body[position] == ";":
            position += 1
        elif body[position] == "#":
            end = body.find("\n", position)
            position = len(body) if end < 0 else end
        else:
            break
    return position
