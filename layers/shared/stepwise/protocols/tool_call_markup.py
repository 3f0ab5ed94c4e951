"""The tool-call markup of each model family, read from a reply's text.

A server without the model's tool-call parser (vLLM, llama.cpp or a gateway passing text through) returns the
calls as the model wrote them. The families differ in how a call opens and how its arguments are written:

- a tag, then JSON (an object, a list of objects, or objects one after another): Hermes and Qwen
  ``<tool_call>``, Granite ``<|tool_call|>``, Jamba, Hunyuan and MiniMax ``<tool_calls>``, Apertus
  ``<|tools_prefix|>`` (each call keyed by the tool's name), GigaChat ``<|function_call|>``, Granite-20B
  ``<function_call>``, InternLM2 ``<|action_start|><|plugin|>``, LongCat, Mistral ``[TOOL_CALLS]``, Phi-4-mini
  ``functools[...]``, Llama 3.1 ``<|python_tag|>`` (its built-in tools called as ``brave_search.call(...)``), and
  Llama 3.1 to 4's custom ``<function=name>{...}</function>`` (Functionary v3.1 writes it right after a remark);
- a tag, then a name and the arguments in markup: Qwen3-Coder and Seed-OSS ``<function=name><parameter=p>``
  (OpenHands' prompt-based calling writes the same without the tag, on a line of its own),
  GLM-4.5 ``name<arg_key>p</arg_key><arg_value>v</arg_value>``, MiniMax-M2 ``<invoke name=...><parameter
  name=...>`` (MiniMax-M3: an element per argument; DeepSeek-V3.2 and V4 the same inside ``<function_calls>``
  or ``<tool_calls>``, each tag with ``DSML`` between full-width bars), Claude's prompt-based
  ``<function_calls><invoke><tool_name>name</tool_name><parameters>`` (and DeepSeek-V4's ``<function_call>
  <invoke_name>name</invoke_name><parameters>``), Mistral v11 ``[TOOL_CALLS]name{...}`` (or ``name[ARGS]{...}``);
- special tokens (read in `tool_call_tokens`): DeepSeek-V3/V3.1/R1 ``<|tool▁call▁begin|>`` (with full-width
  bars), Kimi-K2 ``<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>``, gpt-oss's harmony
  ``to=functions.name``, Qwen-Agent's ``✿FUNCTION✿: name`` then ``✿ARGS✿: {...}``, FunctionGemma's
  ``<start_function_call>call:name{key:<escape>value<escape>}``, Gemma 4's ``<|tool_call>call:name{key:<|"|>value
  <|"|>}<tool_call|>``;
- no tag at all: a Python list of calls (Llama 3.2/4 ``[get_weather(city='SF')]``, Llama 4 also inside
  ``<|python_start|>``) or call objects in the text (Llama 3 ``{"name": ..., "parameters": {...}}``, xLAM's
  list, fenced or not; Command R's ``{"tool_name", "parameters"}``).

The readers follow the format each family's chat template documents (and vLLM's parsers read), one per family
of markup rather than per model, so a fine-tune that reuses a family's markup is read too; `text_tool_calls`
runs them all and takes the family whose markup starts first. No library reads all of them from text (each
server parser works on one model's tokens), hence this module.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from stepwise.protocols.call_syntax import parse_call_at
from stepwise.protocols.lenient_json import find_objects, load_lenient, scan_value


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
    r"|<TOOLCALL>|<\|tool_call_start\|>|<\|START_ACTION\|>|<\|tools_prefix\|>|<\|function_call\|>"
    r"|(?:<\|message_sep\|>\s*+)?function call<\|role_sep\|>"
    r"|<\|action_start\|>\s*<\|plugin\|>|\[TOOL_CALLS\]|\bfunctools(?=\s*\[)|<\|python_tag\|>|<\|python_start\|>"
)
_CLOSING = re.compile(
    r"</tool_calls?>|</function_calls?>|</seed:tool_call>|</longcat_tool_call>|</minimax:tool_call>"
    r"|</TOOLCALL>|<\|tool_call_end\|>|<\|END_ACTION\|>|<\|tools_suffix\|>"
    r"|<\|action_end\|>|<\|python_end\|>|<\|eom_id\|>|<\|eot_id\|>"
)
_FUNCTION = re.compile(r"<function=(?P<name>[^>\s]+)>(?P<body>.*?)(?:</function>|\Z)", re.DOTALL)
_FUNCTION_OPENING = re.compile(r"<function=(?P<name>[^>\s]++)>")
_FUNCTION_CLOSING = re.compile(r"</function>")
_LINE_FUNCTION = re.compile(
    r"(?:^|\n)[ \t]*+(?P<call><function=(?P<name>[^>\s]+)>(?P<body>.*?)(?:</function>|\Z))", re.DOTALL
)
_PARAMETER = re.compile(r"<parameter=(?P<name>[^>\s]+)>(?P<value>.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
# MiniMax-M2's <invoke>, Step3's <steptml:invoke>: a namespace may prefix the tags.
INVOKE = re.compile(
    r"<(?:[\w-]++:)?invoke\s++name=\"(?P<name>[^\"]+)\"\s*>(?P<body>.*?)(?:</(?:[\w-]++:)?invoke>|\Z)", re.DOTALL
)
# DeepSeek-V3.2 and V4 add string="true" (the value is text) or "false" (JSON) after the name.
NAMED_PARAMETER = re.compile(
    r"<(?:[\w-]++:)?parameter\s++name=\"(?P<name>[^\"]+)\"[^<>]*+>(?P<value>.*?)"
    r"(?:</(?:[\w-]++:)?parameter>|(?=<(?:[\w-]++:)?parameter\s)|\Z)",
    re.DOTALL,
)
# Claude's prompt-based calls (anthropics/anthropic-tools, Bedrock Agents' prompts): <invoke><tool_name>name
# </tool_name><parameters><p>value</p></parameters></invoke>, each parameter an element of its own.
_LEGACY_INVOKE = re.compile(
    r"<invoke>\s*+<tool_name>\s*+(?P<name>[^<\s]++)\s*+</tool_name>(?P<body>.*?)(?:</invoke>|\Z)", re.DOTALL
)
_LEGACY_PARAMETERS = re.compile(r"<parameters>(?P<body>.*?)(?:</parameters>|\Z)", re.DOTALL)
# The same without the <invoke> around it, the name in an element of its own first: DeepSeek-V4 writes
# <function_call><invoke_name>name</invoke_name><parameters>...</parameters></function_call>.
_NAME_ELEMENT = re.compile(r"<(?P<tag>invoke_name|tool_name|function_name)>\s*+(?P<name>[^<\s]++)\s*+</(?P=tag)>")
_ELEMENT = re.compile(r"<(?P<tag>[A-Za-z_][\w.\-]*+)>(?P<value>[^<]*+)</(?P=tag)>")
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

# Cohere's Command R writes "tool_name" (Command R7B adds "tool_call_id") where others write "name".
_CALL_KEYS = {"name", "tool_name", "function", "arguments", "parameters", "params", "type", "id", "tool_call_id"}
# Where the arguments of a call object are: OpenAI's and Hermes' key, Llama 3's, and the shorter one some
# prompts ask for (Hermes 2 Pro under llama.cpp and Ollama wrote "params" when asked so).
_ARGUMENT_KEYS = ("arguments", "parameters", "params")
# The opening of a call in some family's markup, where prose never writes it: a special token, a tag that JSON
# or markup follows, or a Qwen3-Coder tag opening a line (its <parameter=...> too, when the model garbled the
# <function=...> before it).
_CALL_OPENING = re.compile(
    r"<tool_calls?>(?=\s*+[{\[<])|<function_calls?>(?=\s*+[{\[<])|<(?:seed|minimax):tool_call>|<longcat_tool_call>"
    r"|<TOOLCALL>|<\|tool_call>"
    r"|<\|(?:tool_call|python_tag|python_start|tool_call_start|action_start|tool_calls_section_begin|tool_call_begin"
    r"|START_ACTION|tools_prefix|function_call)\|>|\[TOOL_CALLS\]|<start_function_call>|✿FUNCTION✿"
    "|<[|\uff5c]tool[\u2581_ ]calls?[\u2581_ ]begin[|\uff5c]>"
    r"|(?:^|\n)[ \t]*+<(?:function|parameter)=[^>\s]++>"
)
# Tokens some families write inside their call markup, never text: MiniMax-M3's ]<]minimax[>[ before each tag,
# DeepSeek-V3.2's and V4's DSML (between full-width bars, or ASCII ones) right after each tag's "<" or "</".
_MARKUP_TOKENS = (
    ("]<]minimax[>[<", "<"),
    ("<\uff5cDSML\uff5c", "<"),
    ("</\uff5cDSML\uff5c", "</"),
    ("<|DSML|", "<"),
    ("</|DSML|", "</"),
)
_TRAILING_FENCE = re.compile(r"```[\w+.-]*\s*\Z")


def without_markup_tokens(text: str) -> str:
    """`text` with the tokens some families write inside their call markup taken out of its tags."""
    for token, tag in _MARKUP_TOKENS:
        if token in text:
            text = text.replace(token, tag)
    return text


def tagged_calls(text: str) -> Found | None:
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


def bare_function_calls(text: str) -> Found | None:
    """``<function=name><parameter=p>v</parameter></function>`` blocks that open a line with no ``<tool_call>``
    around them: OpenHands' prompt-based calling, which SWE-agent-LM and Qwen3-Coder fine-tunes also write (its
    arguments as ``<parameter=p>`` tags, or as one JSON object: Llama 3.1's custom tool format)."""
    calls = [(match.start("call"), _function_call(match)) for match in _LINE_FUNCTION.finditer(text)]
    return Found(calls[0][0], [call for _, call in calls]) if calls else None


def inline_function_calls(text: str) -> Found | None:
    """Closed ``<function=name>{...}</function>`` tags holding JSON anywhere in the text, as Functionary v3.1
    writes them right after its remark. In the middle of prose such a tag may also be an example an answer shows,
    so these are read as calls written without markup of their own (`text_tool_calls` decides which)."""
    calls = _json_function_tags(text)
    return Found(calls[0][0], [call for _, call in calls]) if calls else None


def _json_function_tags(text: str) -> list[tuple[int, TextCall]]:
    """Closed ``<function=name>`` tags whose body is one JSON object, wherever they are. Each opening is paired
    with the first closing tag after it from one list of closings, so no search runs twice over the text."""
    closings = [match.start() for match in _FUNCTION_CLOSING.finditer(text)]
    calls: list[tuple[int, TextCall]] = []
    for opening in _FUNCTION_OPENING.finditer(text):
        index = bisect.bisect_left(closings, opening.end())
        if index == len(closings):
            break
        body = text[opening.end() : closings[index]].strip()
        value = scan_value(body, 0) if body.startswith("{") else None
        if value is None or value[1] != len(body):
            return []
        calls.append((opening.start(), TextCall(opening.group("name"), value[0])))
    return calls


def payload_calls(body: str, *, closed: bool) -> list[TextCall]:
    """The calls in what follows an opening tag (`closed` when its closing tag ends it), whichever way the
    family writes them."""
    text = body.strip()
    if "<function=" in text:
        return [_function_call(match) for match in _FUNCTION.finditer(text)]
    invokes = [_invoke_call(match) for match in INVOKE.finditer(text)]
    invokes = invokes or [
        _element_call(match.group("name"), match.group("body")) for match in _LEGACY_INVOKE.finditer(text)
    ]
    if invokes:
        return invokes
    name_element = _NAME_ELEMENT.match(text)
    if name_element is not None:
        return [_element_call(name_element.group("name"), text[name_element.end() :])]
    named = _NAME_LINE.match(text)
    if named is not None and (closed or named.group("end")):
        pairs = {match.group("key").strip(): _markup_text(match.group("value")) for match in _ARG_PAIR.finditer(text)}
        return [TextCall(named.group("name"), pairs, markup=True)]
    mistral = _NAME_THEN_JSON.match(text)
    if mistral is not None:
        value = scan_value(text, mistral.end())
        return [TextCall(mistral.group("name"), value[0] if value else text[mistral.end() :])]
    return _json_calls(text) or pythonic_calls(text)


def _element_call(name: str, body: str) -> TextCall:
    """A call in Claude's prompt-based markup, or DeepSeek-V4's like it: its parameters as elements (or one JSON
    object) in the ``<parameters>`` of the `body` after its name."""
    parameters = _LEGACY_PARAMETERS.search(body)
    inner = parameters.group("body") if parameters else ""
    if inner.strip().startswith("{"):
        return TextCall(name, inner.strip())
    return TextCall(name, _element_values(inner), markup=True)


def _element_values(body: str) -> dict[str, str]:
    """The arguments written as an element each, ``<city>Lyon</city>``, named by their tags."""
    return {match.group("tag"): _markup_text(match.group("value")) for match in _ELEMENT.finditer(body)}


def _invoke_call(invoke: re.Match[str]) -> TextCall:
    """An ``<invoke name=...>`` call: its arguments as ``<parameter name=...>`` tags (MiniMax-M2, Step3), or as an
    element per argument, named by its tag (MiniMax-M3)."""
    if NAMED_PARAMETER.search(invoke.group("body")) is None:
        return TextCall(invoke.group("name"), _element_values(invoke.group("body")), markup=True)
    return markup_call(invoke, NAMED_PARAMETER)


def _function_call(function: re.Match[str]) -> TextCall:
    """A ``<function=name>`` call: its arguments as ``<parameter=p>`` tags, or as one JSON object (Llama 3.1 to 4's
    custom tool format, ``<function=name>{"n": 10}</function>``)."""
    body = function.group("body").strip()
    if body.startswith("{") and _PARAMETER.search(body) is None:
        value = scan_value(body, 0)
        return TextCall(function.group("name"), value[0] if value else body)
    return markup_call(function, _PARAMETER)


def markup_call(function: re.Match[str], parameter: re.Pattern[str]) -> TextCall:
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
    """Call objects written one after another (apart by spaces, commas or semicolons), or in lists; when
    something unreadable stands between them (a line of broken JSON), every call object that can be read."""
    calls: list[TextCall] = []
    position = 0
    while True:
        while position < len(text) and (text[position].isspace() or text[position] in ",;"):
            position += 1
        found = scan_value(text, position) if position < len(text) else None
        if found is None:
            break
        value, position = found
        read = [_tagged_call(item) for item in (value if isinstance(value, list) else [value])]
        if None in read:
            break
        calls.extend(call for call in read if call is not None)
    if position >= len(text):
        return calls
    readable = [call for span in find_objects(text) if is_call_object(span.value) and (call := json_call(span.value))]
    return readable if len(readable) > len(calls) else calls


def _tagged_call(value: Any) -> TextCall | None:
    """A call object after a call tag: as anywhere else, or keyed by the tool's name (Apertus:
    ``{"get_weather": {"city": "Paris"}}``)."""
    call = json_call(value)
    if call is not None or not isinstance(value, dict) or len(value) != 1:
        return call
    name, arguments = next(iter(value.items()))
    return TextCall(name, arguments) if _IDENTIFIER.match(name) and isinstance(arguments, dict) else None


def json_call(value: Any) -> TextCall | None:
    """A call object: ``{"name": ..., "arguments": ...}`` (or ``parameters``; Cohere's ``tool_name``; wrapped as
    OpenAI's ``{"type": "function", "function": {...}}``); None for anything else."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict):
        return None
    name = _call_name(value)
    if name is None:
        return None
    return TextCall(name, next((value[key] for key in _ARGUMENT_KEYS if key in value), {}))


def _call_name(value: dict[str, Any]) -> str | None:
    """The tool a call object names: under ``name``, Cohere's ``tool_name``, or ``function`` as a plain string
    (LocalAI's grammar-constrained calls: ``{"function": "get_weather", "arguments": {...}}``)."""
    name = value.get("name", value.get("tool_name", value.get("function")))
    return name if isinstance(name, str) else None


def pythonic_calls(text: str) -> list[TextCall]:
    """Python calls with keyword arguments: ``[f(a=1), g()]``, one such list per line (``[f(a=1)]\n[g()]``,
    as small fine-tunes write parallel calls), or without the brackets."""
    body = text.strip()
    bracketed = body.startswith("[") and body.endswith("]")
    if bracketed:
        body = body[1:-1]
    between = ",;][" if bracketed else ",;"
    calls: list[TextCall] = []
    position = 0
    while position < len(body):
        read = parse_call_at(body, position)
        if read is None:
            return []
        call, position = read
        if not _IDENTIFIER.match(call.name) or call.positional:
            return []
        calls.append(TextCall(_builtin_tool_name(call.name), call.named))
        while position < len(body) and (body[position].isspace() or body[position] in between):
            position += 1
    return calls


def _builtin_tool_name(name: str) -> str:
    """The tool a Python call names: Llama 3.1's built-in tools are called as ``brave_search.call(query=...)``."""
    tool = name.removesuffix(".call")
    return tool if tool and tool != name and not tool.endswith(".") else name


def pythonic_reply_calls(text: str) -> Found | None:
    """A Python list of calls that ends the reply, from the start of a line (Llama 3.2 and 4 without their
    tags; a remark may come before it). The first and the last line that opens with a bracket are tried.
    A reply that is nothing but calls may leave the brackets out (Gemma fine-tunes under BFCL's prompt)."""
    if text.rstrip().endswith(")"):
        bare = pythonic_calls(text)
        return Found(0, bare) if bare else None
    if not text.rstrip().endswith("]"):
        return None
    openers = [match.end() - 1 for match in _LINE_BRACKET.finditer(text)]
    for start in dict.fromkeys(openers[:1] + openers[-1:]):
        calls = pythonic_calls(text[start:])
        if calls:
            return Found(start, calls)
    return None


def call_object_calls(text: str) -> Found | None:
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
        and _call_name(value) is not None
        and any(key in value for key in _ARGUMENT_KEYS)
        and set(value) <= _CALL_KEYS
    )


def call_opening_position(text: str, start: int = 0) -> int | None:
    """Where the first opening of a call in some model family's markup is in `text` from `start`, or None."""
    opening = _CALL_OPENING.search(text, start)
    return opening.start() if opening else None


def call_opening(text: str) -> str | None:
    """The opening of a call in some model family's markup that `text` holds, or None: when no call could be
    read after it, the call was cut off or broken, not an answer."""
    opening = _CALL_OPENING.search(without_markup_tokens(text))
    return opening.group().strip() if opening else None
