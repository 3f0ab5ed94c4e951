"""Tool-call markup written with a model family's special tokens: DeepSeek's ``<|tool▁call▁begin|>`` (with
full-width bars), Kimi-K2's ``<|tool_call_begin|>``, gpt-oss's harmony recipients, Qwen-Agent's ``✿FUNCTION✿``
FunctionGemma's ``<start_function_call>`` and Gemma 4's ``<|tool_call>`` (see `tool_call_markup` for every family
read and why by hand)."""

from __future__ import annotations

import json
import re

from stepwise.protocols.lenient_json import load_lenient, scan_value, strip_code_fence
from stepwise.protocols.tool_call_markup import INVOKE, NAMED_PARAMETER, Found, TextCall, markup_call

# DeepSeek writes its tokens with full-width bars (U+FF5C) and U+2581 for spaces; both spellings are read.
_DS_BAR = "[|\uff5c]"
_DS_SPACE = "[\u2581_ ]"
_DEEPSEEK_BEGIN = f"<{_DS_BAR}tool{_DS_SPACE}call{_DS_SPACE}begin{_DS_BAR}>"
_DEEPSEEK_CALL = re.compile(
    f"{_DEEPSEEK_BEGIN}(?P<body>.*?)(?:<{_DS_BAR}tool{_DS_SPACE}call{_DS_SPACE}end{_DS_BAR}>|(?={_DEEPSEEK_BEGIN})|\\Z)",
    re.DOTALL,
)
_DEEPSEEK_CALLS = re.compile(f"<{_DS_BAR}tool{_DS_SPACE}calls{_DS_SPACE}begin{_DS_BAR}>")
_DEEPSEEK_SEP = re.compile(f"<{_DS_BAR}tool{_DS_SPACE}sep{_DS_BAR}>")
_KIMI_CALL = re.compile(
    r"<\|tool_call_begin\|>(?P<id>[^<]*+)<\|tool_call_argument_begin\|>(?P<args>.*?)(?:<\|tool_call_end\|>|\Z)",
    re.DOTALL,
)
_KIMI_SECTION = re.compile(r"<\|tool_calls_section_begin\|>")
_KIMI_ID = re.compile(r"^(?:functions\.)?(?P<name>.+?)(?::\d+)?$")
_QWEN_AGENT_CALL = re.compile(r"✿FUNCTION✿[ \t]*+:[ \t]*+(?P<name>[^\s✿]++)\s*+✿ARGS✿[ \t]*+:[ \t]*+")
_QWEN_AGENT_END = re.compile(r"✿(?:RESULT|RETURN|FUNCTION)✿")
_GEMMA_CALL = re.compile(
    r"<start_function_call>\s*+call:(?P<name>[^{\s<]++)(?P<body>.*?)(?:<end_function_call>|(?=<start_function_call>)|\Z)",
    re.DOTALL,
)
# A key starts the body or follows a comma, a space or the end of the value before it.
_GEMMA_ARGUMENT = re.compile(r"(?<![^\s{,>])(?P<key>[^\s:,{}<>]++):<escape>(?P<value>.*?)(?:<escape>|\Z)", re.DOTALL)
# Gemma 4: <|tool_call>call:name{key:<|"|>text<|"|>,n:3}<tool_call|>, its strings between <|"|> quote tokens.
_GEMMA4_CALL = re.compile(
    r"<\|tool_call>\s*+call:(?P<name>[^{\s<]++)(?P<body>.*?)(?:<tool_call\|>|(?=<\|tool_call>)|\Z)", re.DOTALL
)
_GEMMA4_QUOTE = '<|"|>'
_HARMONY_MESSAGE = re.compile(r"<\|message\|>")
_HARMONY_BOUNDARY = re.compile(r"<\|(?:start|end|call|return)\|>")
_HARMONY_RECIPIENT = re.compile(r"\bto=(?:functions\.)?(?P<name>[^\s<]+)")


def deepseek_calls(text: str) -> Found | None:
    """DeepSeek's calls: ``<|tool▁call▁begin|>function<|tool▁sep|>name`` then fenced JSON (V3, R1), or
    ``<|tool▁call▁begin|>name<|tool▁sep|>{...}`` (V3.1 on), their bars full-width."""
    calls: list[TextCall] = []
    first: int | None = None
    for match in _DEEPSEEK_CALL.finditer(text):
        invokes = [markup_call(found, NAMED_PARAMETER) for found in INVOKE.finditer(match.group("body"))]
        parts = _DEEPSEEK_SEP.split(match.group("body"), maxsplit=1)
        first = match.start() if first is None and (invokes or len(parts) == 2) else first
        if invokes:
            # Step3 writes its calls as <steptml:invoke> markup between the same tokens.
            calls.extend(invokes)
            continue
        if len(parts) != 2:
            continue
        head, rest = parts[0].strip(), parts[1]
        if head in ("", "function"):
            name, _, rest = rest.strip().partition("\n")
        else:
            name = head
        decoded = load_lenient(strip_code_fence(rest))
        calls.append(TextCall(name.strip(), decoded if decoded is not None else rest.strip()))
    if first is None:
        return None
    section = _DEEPSEEK_CALLS.search(text, 0, first)
    return Found(section.start() if section else first, calls)


def kimi_calls(text: str) -> Found | None:
    """Kimi-K2's calls: a call id (``functions.name:0``) then the JSON arguments."""
    matches = list(_KIMI_CALL.finditer(text))
    if not matches:
        return None
    calls = []
    for match in matches:
        name = _KIMI_ID.match(match.group("id").strip())
        arguments = load_lenient(match.group("args"))
        calls.append(
            TextCall(name.group("name") if name else "", arguments if arguments is not None else match.group("args"))
        )
    section = _KIMI_SECTION.search(text, 0, matches[0].start())
    return Found(section.start() if section else matches[0].start(), calls)


def harmony_calls(text: str) -> Found | None:
    """gpt-oss's calls: a harmony message whose header names its recipient (``to=functions.name``)."""
    calls: list[TextCall] = []
    first: int | None = None
    previous_end = 0
    for message in _HARMONY_MESSAGE.finditer(text):
        if message.start() < previous_end:
            # inside the body of the message before (its text wrote the token)
            continue
        header_start = _harmony_header(text, previous_end, message.start())
        end = _HARMONY_BOUNDARY.search(text, message.end())
        recipient = _HARMONY_RECIPIENT.search(text, header_start, message.start())
        if recipient is not None:
            raw = text[message.end() : end.start() if end else len(text)]
            decoded = load_lenient(raw)
            calls.append(TextCall(recipient.group("name"), decoded if decoded is not None else raw.strip()))
            first = header_start if first is None else first
        if end is None:
            # this message runs to the end of the text
            break
        previous_end = end.end()
    return Found(first, calls) if first is not None else None


def _harmony_header(text: str, start: int, message: int) -> int:
    """Where the header of the harmony message at `message` starts: its ``<|start|>``, else its ``<|channel|>``
    (text before it that no token ends is what the model wrote before the message)."""
    boundaries = list(_HARMONY_BOUNDARY.finditer(text, start, message))
    last = boundaries[-1] if boundaries else None
    if last is not None and last.group() == "<|start|>":
        return last.start()
    after = last.end() if last is not None else start
    channel = text.find("<|channel|>", after, message)
    return channel if channel >= 0 else after


def qwen_agent_calls(text: str) -> Found | None:
    """Qwen-Agent's calls: ``✿FUNCTION✿: name``, then ``✿ARGS✿:`` and the arguments (JSON, else the text up to
    the next marker)."""
    calls: list[TextCall] = []
    matches = list(_QWEN_AGENT_CALL.finditer(text))
    for index, match in enumerate(matches):
        limit = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = text[match.end() : limit]
        value = scan_value(body, 0)
        if value is not None:
            calls.append(TextCall(match.group("name"), value[0]))
            continue
        end = _QWEN_AGENT_END.search(body)
        calls.append(TextCall(match.group("name"), body[: end.start() if end else len(body)].strip()))
    return Found(matches[0].start(), calls) if matches else None


def function_gemma_calls(text: str) -> Found | None:
    """FunctionGemma's calls: ``call:name{key:<escape>value<escape>,...}`` between its call tokens, each value
    text the tool's schema types."""
    calls = [
        TextCall(
            match.group("name"),
            {found.group("key"): found.group("value") for found in _GEMMA_ARGUMENT.finditer(match.group("body"))},
            markup=True,
        )
        for match in _GEMMA_CALL.finditer(text)
    ]
    first = _GEMMA_CALL.search(text)
    return Found(first.start(), calls) if first is not None else None


def gemma4_calls(text: str) -> Found | None:
    """Gemma 4's calls: ``call:name{key:value,...}`` between ``<|tool_call>`` and ``<tool_call|>``, its keys
    bare and its strings between ``<|"|>`` quote tokens (or JSON quotes)."""
    matches = list(_GEMMA4_CALL.finditer(text))
    calls = [TextCall(match.group("name"), _gemma4_arguments(match.group("body"))) for match in matches]
    return Found(matches[0].start(), calls) if matches else None


def _gemma4_arguments(body: str) -> object:
    """The arguments object of a Gemma 4 call, each ``<|"|>`` string made a JSON one; the text itself when it
    cannot be read (a call cut off), so the model is told its call could not be read."""
    parts = body.strip().split(_GEMMA4_QUOTE)
    if len(parts) % 2 == 0:
        return body.strip()
    value = load_lenient("".join(json.dumps(part) if index % 2 else part for index, part in enumerate(parts)))
    return value if isinstance(value, dict) else body.strip()
