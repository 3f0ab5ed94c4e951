"""The tool-call markup of each model family, read from a reply's text.

A server without the model's tool-call parser (vLLM, llama.cpp or a gateway passing text through) returns the
calls as the model wrote them. The families differ in how a call opens and how its arguments are written:

- a tag, then JSON (an object, a list of objects, or objects one after another): Hermes and Qwen
  ``<tool_call>``, Granite ``<|tool_call|>``, Jamba, Hunyuan and MiniMax ``<tool_calls>``, Granite-20B
  ``<function_call>``, InternLM2 ``<|action_start|><|plugin|>``, LongCat, Mistral ``[TOOL_CALLS]``, Phi-4-mini
  ``functools[...]``, Llama 3.1 ``<|python_tag|>``;
- a tag, then a name and the arguments in markup: Qwen3-Coder and Seed-OSS ``<function=name><parameter=p>``
  (OpenHands' prompt-based calling writes the same without the tag, on a line of its own),
  GLM-4.5 ``name<arg_key>p</arg_key><arg_value>v</arg_value>``, MiniMax-M2 ``<invoke name=...><parameter
  name=...>``, Mistral v11 ``[TOOL_CALLS]name{...}`` (or ``name[ARGS]{...}``);
- FunctionGemma's ``<start_function_call>call:name{key:<escape>value<escape>}<end_function_call>``;
- Qwen-Agent's function-calling prompt: ``✿FUNCTION✿: name`` then ``✿ARGS✿: {...}`` (then ``✿RESULT✿``);
- special tokens around a name and its JSON: DeepSeek-V3/V3.1/R1 ``<|tool▁call▁begin|>`` (with full-width
  bars), Kimi-K2
  ``<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>``, gpt-oss's harmony ``to=functions.name``;
- no tag at all: a Python list of calls (Llama 3.2/4 ``[get_weather(city='SF')]``, Llama 4 also inside
  ``<|python_start|>``) or call objects in the text (Llama 3 ``{"name": ..., "parameters": {...}}``, xLAM's
  list, fenced or not).

The readers here follow the format each family's chat template documents (and vLLM's parsers read), one per
family of markup rather than per model, so a fine-tune that reuses a family's markup is read too. No library
reads all of them from text (each server parser works on one model's tokens), hence this module.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from stepwise.protocols.call_syntax import parse_call_at
from stepwise.protocols.lenient_json import find_objects, load_lenient, scan_value, strip_code_fence


class TextCall(NamedTuple):
    """One call read from text: its name and arguments (None when they could not be read).

    `markup` is True when each argument was written as text between tags: its type is then the tool's to say
    (see `markup_value`), since "123" is a number to one tool and a string to another.
    """

    name: str
    arguments: Any
    markup: bool = False


class Found(NamedTuple):
    """The calls a reader found and where the first one's markup starts (the text before it is the thought)."""

    start: int
    calls: list[TextCall]


_OPENING = re.compile(
    r"<tool_calls?>|<\|tool_call\|>|<function_calls?>|<seed:tool_call>|<longcat_tool_call>|<minimax:tool_call>"
    r"|<TOOLCALL>|<\|tool_call_start\|>|<\|START_ACTION\|>"
    r"|<\|action_start\|>\s*<\|plugin\|>|\[TOOL_CALLS\]|\bfunctools(?=\s*\[)|<\|python_tag\|>|<\|python_start\|>"
)
_CLOSING = re.compile(
    r"</tool_calls?>|</function_calls?>|</seed:tool_call>|</longcat_tool_call>|</minimax:tool_call>"
    r"|</TOOLCALL>|<\|tool_call_end\|>|<\|END_ACTION\|>"
    r"|<\|action_end\|>|<\|python_end\|>|<\|eom_id\|>|<\|eot_id\|>"
)
_FUNCTION = re.compile(r"<function=(?P<name>[^>\s]+)>(?P<body>.*?)(?:</function>|\Z)", re.DOTALL)
_LINE_FUNCTION = re.compile(
    r"(?:^|\n)[ \t]*+(?P<call><function=(?P<name>[^>\s]+)>(?P<body>.*?)(?:</function>|\Z))", re.DOTALL
)
_PARAMETER = re.compile(r"<parameter=(?P<name>[^>\s]+)>(?P<value>.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
# MiniMax-M2's <invoke>, Step3's <steptml:invoke>: a namespace may prefix the tags.
_INVOKE = re.compile(
    r"<(?:[\w-]++:)?invoke\s++name=\"(?P<name>[^\"]+)\"\s*>(?P<body>.*?)(?:</(?:[\w-]++:)?invoke>|\Z)", re.DOTALL
)
_NAMED_PARAMETER = re.compile(
    r"<(?:[\w-]++:)?parameter\s++name=\"(?P<name>[^\"]+)\"\s*>(?P<value>.*?)"
    r"(?:</(?:[\w-]++:)?parameter>|(?=<(?:[\w-]++:)?parameter\s)|\Z)",
    re.DOTALL,
)
_ARG_PAIR = re.compile(
    r"<arg_key>(?P<key>[^<]*)</arg_key>\s*+<arg_value>(?P<value>.*?)(?:</arg_value>|(?=<arg_key>)|\Z)", re.DOTALL
)
# GLM's call: the function's name alone on the first line, its arguments as key/value tags (or none, when the
# closing tag follows the name: a word after an opening tag in prose is no call).
_NAME_LINE = re.compile(r"(?P<name>[A-Za-z_][\w\-]*(?:\.[\w\-]+)*)\s*(?P<end><arg_key>|\Z)")
# Mistral v11+: the name, then (from v13) a call id, then the JSON arguments.
_NAME_THEN_JSON = re.compile(r"(?P<name>[A-Za-z_][\w.\-]*+)\s*+(?:\[CALL_ID\][^\[{]*+)?(?:\[ARGS\])?\s*+(?=\{)")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.\-]*\Z")
_LINE_BRACKET = re.compile(r"(?:^|\n)[ \t]*+\[")

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
_HARMONY_MESSAGE = re.compile(r"<\|message\|>")
_HARMONY_BOUNDARY = re.compile(r"<\|(?:start|end|call|return)\|>")
_HARMONY_RECIPIENT = re.compile(r"\bto=(?:functions\.)?(?P<name>[^\s<]+)")
_CALL_KEYS = {"name", "arguments", "parameters", "type", "id"}
_TRAILING_FENCE = re.compile(r"```[\w+.-]*\s*\Z")


def find_calls(text: str) -> Found | None:
    """The calls written in `text` in any family's markup (the family whose markup starts first), or None."""
    readers = (
        _tagged,
        _bare_functions,
        _deepseek,
        _kimi,
        _harmony,
        _qwen_agent,
        _function_gemma,
        _pythonic_reply,
        _call_objects,
    )
    found = [reader(text) for reader in readers]
    readable = [item for item in found if item is not None and item.calls]
    return min(readable, key=lambda item: item.start) if readable else None


def _tagged(text: str) -> Found | None:
    """Calls after an opening tag, each tag's body read up to its closing tag or the next opening one."""
    openings = list(_OPENING.finditer(text))
    start: int | None = None
    calls: list[TextCall] = []
    for index, opening in enumerate(openings):
        limit = openings[index + 1].start() if index + 1 < len(openings) else len(text)
        closing = _CLOSING.search(text, opening.end(), limit)
        read = payload_calls(text[opening.end() : closing.start() if closing else limit], closed=closing is not None)
        if read and start is None:
            start = opening.start()
        calls.extend(read)
    return Found(start, calls) if start is not None else None


def _bare_functions(text: str) -> Found | None:
    """``<function=name><parameter=p>v</parameter></function>`` blocks that open a line with no ``<tool_call>``
    around them: OpenHands' prompt-based calling, which SWE-agent-LM and Qwen3-Coder fine-tunes also write."""
    calls = [(match.start("call"), _markup_call(match, _PARAMETER)) for match in _LINE_FUNCTION.finditer(text)]
    return Found(calls[0][0], [call for _, call in calls]) if calls else None


def payload_calls(body: str, *, closed: bool) -> list[TextCall]:
    """The calls in what follows an opening tag (`closed` when its closing tag ends it), whichever way the
    family writes them."""
    text = body.strip()
    if "<function=" in text:
        return [_markup_call(match, _PARAMETER) for match in _FUNCTION.finditer(text)]
    invokes = [_markup_call(match, _NAMED_PARAMETER) for match in _INVOKE.finditer(text)]
    if invokes:
        return invokes
    named = _NAME_LINE.match(text)
    if named is not None and (closed or named.group("end")):
        pairs = {match.group("key").strip(): _markup_text(match.group("value")) for match in _ARG_PAIR.finditer(text)}
        return [TextCall(named.group("name"), pairs, markup=True)]
    mistral = _NAME_THEN_JSON.match(text)
    if mistral is not None:
        value = scan_value(text, mistral.end())
        return [TextCall(mistral.group("name"), value[0] if value else text[mistral.end() :])]
    return _json_calls(text) or _pythonic_calls(text)


def _markup_call(function: re.Match[str], parameter: re.Pattern[str]) -> TextCall:
    """A call whose arguments are tags around each value (`parameter` reads one)."""
    values = parameter.finditer(function.group("body"))
    return TextCall(
        function.group("name"), {match.group("name"): _markup_text(match.group("value")) for match in values}, True
    )


def _markup_text(raw: str) -> str:
    """A value written between tags, as text. Only the line breaks a template puts around a value are markup:
    other spaces are the value's own (an edit tool's indentation)."""
    text = raw.removeprefix("\n").removesuffix("\n")
    return text if text.strip() else ""


def markup_value(text: str, kind: str | None) -> Any:
    """A value written between tags, typed: the text itself for a string parameter, else JSON when it reads as
    JSON (a number, a boolean, an object), else the text."""
    if kind == "string":
        return text
    decoded = load_lenient(text.strip())
    return decoded if decoded is not None and not isinstance(decoded, str) else text


def _json_calls(text: str) -> list[TextCall]:
    """Call objects written one after another (apart by spaces, commas or semicolons), or in lists."""
    calls: list[TextCall] = []
    position = 0
    while True:
        while position < len(text) and (text[position].isspace() or text[position] in ",;"):
            position += 1
        found = scan_value(text, position) if position < len(text) else None
        if found is None:
            return calls
        value, position = found
        for item in value if isinstance(value, list) else [value]:
            call = json_call(item)
            if call is None:
                return calls
            calls.append(call)


def json_call(value: Any) -> TextCall | None:
    """A call object: ``{"name": ..., "arguments": ...}`` (or ``parameters``; Cohere's ``tool_name``; wrapped as
    OpenAI's ``{"type": "function", "function": {...}}``); None for anything else."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool_name")) if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(name, str):
        return None
    return TextCall(name, value.get("arguments", value.get("parameters", {})))


def _pythonic_calls(text: str) -> list[TextCall]:
    """Python calls with keyword arguments: ``[f(a=1), g()]``, or without the brackets."""
    body = text.strip()
    bracketed = body.startswith("[") and body.endswith("]")
    if bracketed:
        body = body[1:-1]
    calls: list[TextCall] = []
    position = 0
    while position < len(body):
        read = parse_call_at(body, position)
        if read is None:
            return []
        call, position = read
        if not _IDENTIFIER.match(call.name) or call.positional:
            return []
        calls.append(TextCall(call.name, call.named))
        while position < len(body) and (body[position].isspace() or body[position] in ",;"):
            position += 1
    return calls


def _pythonic_reply(text: str) -> Found | None:
    """A Python list of calls that ends the reply, from the start of a line (Llama 3.2 and 4 without their
    tags; a remark may come before it). The first and the last line that opens with a bracket are tried."""
    if not text.rstrip().endswith("]"):
        return None
    openers = [match.end() - 1 for match in _LINE_BRACKET.finditer(text)]
    for start in dict.fromkeys(openers[:1] + openers[-1:]):
        calls = _pythonic_calls(text[start:])
        if calls:
            return Found(start, calls)
    return None


def _call_objects(text: str) -> Found | None:
    """Call objects written in the text with no tag (Llama 3 JSON, xLAM's list, fenced or not). Only an
    object whose keys are those of a call counts: a JSON answer that merely has a "name" is no call."""
    spans = [span for span in find_objects(text) if is_call_object(span.value)]
    if not spans:
        return None
    calls = [call for span in spans if (call := json_call(span.value)) is not None]
    before = text[: spans[0].start].rstrip()
    before = before[:-1].rstrip() if before.endswith("[") else before
    return Found(len(_TRAILING_FENCE.sub("", before).rstrip()), calls)


def is_call_object(value: Any) -> bool:
    """True for an object whose keys are those of a call: a name, its arguments (or parameters), maybe an id."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and ("arguments" in value or "parameters" in value)
        and set(value) <= _CALL_KEYS
    )


def _deepseek(text: str) -> Found | None:
    """DeepSeek's calls: ``<|tool▁call▁begin|>function<|tool▁sep|>name`` then fenced JSON (V3, R1), or
    ``<|tool▁call▁begin|>name<|tool▁sep|>{...}`` (V3.1 on), their bars full-width."""
    calls: list[TextCall] = []
    first: int | None = None
    for match in _DEEPSEEK_CALL.finditer(text):
        invokes = [_markup_call(found, _NAMED_PARAMETER) for found in _INVOKE.finditer(match.group("body"))]
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


def _kimi(text: str) -> Found | None:
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


def _harmony(text: str) -> Found | None:
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


def _qwen_agent(text: str) -> Found | None:
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


def _function_gemma(text: str) -> Found | None:
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
