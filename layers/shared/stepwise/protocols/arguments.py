"""From what a model wrote to a `ToolCalls` decision: tool names, argument coercion, key aliases."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from stepwise.inputs.validation_problems import describe_problems
from stepwise.models.messages import ToolCall, ToolSpec
from stepwise.protocols.lenient_json import load_lenient

if TYPE_CHECKING:
    # the decisions load with the first one made: LLMCall reads calls written in text with the helpers here
    # and makes none
    from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls

# Keys are compared after `normalise_key`, so "Action Input", "action_input" and "actionInput" are one key.
NAME_KEYS = ("action", "tool", "toolname", "name", "function", "动作", "行动")
INPUT_KEYS = (
    "actioninput",
    "toolinput",
    "input",
    "arguments",
    "args",
    "parameters",
    "params",
    "动作输入",
    "行动输入",
)
_FINAL_NAMES = {"finalanswer", "final", "finish", "answer", "最终答案", "最终回答"}
# The one argument a final-answer action is given its text in (smolagents' final_answer tool takes "answer").
_ANSWER_KEYS = {"answer", "finalanswer", "response", "output", "result", "text"}
# What models write on an "Action:" line when they mean "no tool" before giving a final answer.
_NO_ACTION_NAMES = {"none", "n/a", "null", "无"}
# Keys models wrap a tool's arguments in instead of naming its parameters (LlamaIndex's `input`, LangChain's
# single-input `__arg1`, a JSON schema's `properties`), compared after `normalise_key`.
_WRAPPER_KEYS = {
    "input",
    "arg1",
    "kwargs",
    "args",
    "arguments",
    "parameters",
    "params",
    "properties",
    "toolinput",
    "actioninput",
}
_TOOL_NAME = re.compile(r"^[^\s()\[\]{}<>\"'`,;]{1,128}$")
_NOT_A_LETTER = re.compile(r"[\W_]+")
# Words that open a sentence about a tool rather than a tool's name ("I will use the search tool").
_SENTENCE_OPENERS = {
    "i",
    "i'll",
    "i'm",
    "we",
    "we'll",
    "let",
    "let's",
    "now",
    "first",
    "then",
    "next",
    "to",
    "use",
    "using",
    "call",
    "calling",
    "please",
    "the",
    "this",
    "my",
    "it",
    "no",
    "none",
}
# A tool named in a few words, as CrewAI and LangChain tools are ("Delegate work to coworker"): no sentence
# punctuation, at most six words.
_WORDED_NAME = re.compile(r"^[^\s()\[\]{}<>\"'`,;:.!?]+(?: [^\s()\[\]{}<>\"'`,;:.!?]+){1,5}$")
_NAME_DECORATION = "`'\"*_ \t\r\n"
DEFAULT_INPUT_KEY = "input"


def normalise_key(key: str) -> str:
    """A key or keyword without case, spaces, underscores or hyphens."""
    return re.sub(r"[\s_-]", "", key).lower()


def pick(obj: dict[str, Any], aliases: tuple[str, ...]) -> tuple[bool, Any]:
    """The value of the first key of `obj` that is one of the aliases (in alias order)."""
    by_key = {normalise_key(str(key)): value for key, value in reversed(obj.items())}
    for alias in aliases:
        if alias in by_key:
            return True, by_key[alias]
    return False, None


def find_tool(tools: list[ToolSpec] | None, name: str) -> ToolSpec | None:
    """The tool called `name`, matched exactly first, then ignoring case."""
    if not tools:
        return None
    exact = next((tool for tool in tools if tool.name == name), None)
    if exact is not None:
        return exact
    folded = name.casefold()
    return next((tool for tool in tools if tool.name.casefold() == folded), None)


def is_final_action(name: str, tools: list[ToolSpec] | None) -> bool:
    """True when an action name means "final answer" rather than a tool the model may call."""
    return normalise_key(name) in _FINAL_NAMES and find_tool(tools, name) is None


def is_no_action(name: str) -> bool:
    """True when an action name says that no tool is called ("None", "N/A")."""
    return normalise_key(name) in _NO_ACTION_NAMES


def parameter_names(tool: ToolSpec | None) -> list[str]:
    """The tool's parameter names in schema order (empty without a tool or properties)."""
    if tool is None:
        return []
    properties = tool.parameters.get("properties")
    return [str(name) for name in properties] if isinstance(properties, dict) else []


def parameter_type(tool: ToolSpec | None, name: str) -> str | None:
    """The JSON-schema type of a tool's parameter, when the schema gives one as a string."""
    properties = tool.parameters.get("properties") if tool is not None else None
    schema = properties.get(name) if isinstance(properties, dict) else None
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else None


def single_required_parameter(tool: ToolSpec | None) -> str | None:
    """The tool's only required parameter, when it has exactly one."""
    if tool is None:
        return None
    required = tool.parameters.get("required")
    if isinstance(required, list) and len(required) == 1 and isinstance(required[0], str):
        return required[0]
    return None


def coerce_arguments(raw: Any, tool: ToolSpec | None) -> dict[str, Any]:
    """Arguments as a JSON object, whatever the model gave: an object, a JSON string or plain text.

    A bare value goes under the tool's only required parameter, else under ``"input"``.
    """
    if isinstance(raw, dict):
        return {str(key): value for key, value in raw.items()}
    if raw is None:
        return {}
    value = raw
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        decoded = load_lenient(text) if text[0] in "{[\"'`" else None
        if isinstance(decoded, dict):
            return {str(key): item for key, item in decoded.items()}
        value = text if decoded is None else decoded
    return {single_required_parameter(tool) or DEFAULT_INPUT_KEY: value}


def unwrapped_arguments(arguments: dict[str, Any], tool: ToolSpec | None) -> dict[str, Any]:
    """Arguments a model wrapped in one key the tool does not have (``{"input": "SF"}`` for a tool taking
    ``query``), unwrapped when there is one reading: the wrapped object's keys are all the tool's
    parameters, or a single value goes to the tool's only parameter. Anything else is left as written.
    """
    names = parameter_names(tool)
    if not names or len(arguments) != 1:
        return arguments
    key, value = next(iter(arguments.items()))
    if key in names or normalise_key(key) not in _WRAPPER_KEYS:
        return arguments
    if isinstance(value, dict) and value and set(map(str, value)) <= set(names):
        return {str(name): item for name, item in value.items()}
    only = single_required_parameter(tool) or (names[0] if len(names) == 1 else None)
    if only is not None and not isinstance(value, dict | list):
        return {only: value}
    return arguments


def decode_arguments(raw: Any) -> dict[str, Any] | None:
    """Native tool-call arguments as an object: an object as is, a JSON string decoded; None if neither.

    A string that decodes to another JSON string is decoded once more, since some models encode twice. No
    arguments at all (``null``, as Cohere writes a call to a tool without parameters, or nothing) are none: ``{}``.
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(key): value for key, value in raw.items()}
    if not isinstance(raw, str):
        return None
    if not raw.strip() or raw.strip() == "null":
        return {}
    decoded = load_lenient(raw)
    if isinstance(decoded, str):
        decoded = load_lenient(decoded)
    return {str(key): value for key, value in decoded.items()} if isinstance(decoded, dict) else None


def answer_text(raw: Any) -> str:
    """A final answer given as an action input: text stays text, an object holding only the answer's text
    (``{"answer": "..."}``, as a final_answer tool is called) is that text, anything else becomes JSON text."""
    if isinstance(raw, dict) and len(raw) == 1:
        key, value = next(iter(raw.items()))
        if isinstance(value, str) and normalise_key(str(key)) in _ANSWER_KEYS:
            raw = value
    if isinstance(raw, str):
        return raw.strip()
    if raw is None:
        return ""
    return json.dumps(raw, ensure_ascii=False, indent=2)


def clean_tool_name(raw: str) -> str:
    """A tool name without the backticks, quotes, bold marks or trailing punctuation models add."""
    return raw.strip().strip(_NAME_DECORATION).rstrip(".:\uff1a").strip(_NAME_DECORATION)


def final_answer(text: str, thought: str) -> FinalAnswer | ParseError:
    """A final answer, or a parse error when it is empty (a run never ends on an empty answer)."""
    from stepwise.models.decision import FinalAnswer, ParseError

    if not text.strip():
        return ParseError(message="Your final answer is empty.")
    return FinalAnswer(text=text.strip(), thought=thought.strip())


def _spelling(name: str) -> str:
    """A tool name without case, spaces or punctuation: how two spellings of one name compare."""
    return _NOT_A_LETTER.sub("", name).casefold()


def named_tool(name: str, tools: list[ToolSpec] | None) -> str | None:
    """The tool an action line names, or None when it names none.

    A name as written, else a tool whose name it spells another way ("Get Weather" for get_weather, "Gmail: Find
    Email" for gmail_find_email, as Zapier's tools are named), else a name of a few words as the frameworks whose
    tools have such names read it; a sentence is no tool name.
    """
    if _TOOL_NAME.match(name):
        return name
    spelled = _spelling(name)
    for tool in tools or []:
        if _spelling(tool.name) == spelled:
            return tool.name
    words = name.split()
    worded = " ".join(words)
    if len(worded) <= 64 and _WORDED_NAME.match(worded) and words[0].casefold() not in _SENTENCE_OPENERS:
        return worded
    return None


def tool_call(
    raw_name: Any,
    raw_arguments: Any,
    *,
    tools: list[ToolSpec] | None,
    call_id: str,
    thought: str = "",
    notes: list[str] | None = None,
) -> ToolCalls | ParseError:
    """One tool call decision from a raw name and raw arguments, or a parse error saying what is wrong."""
    from stepwise.models.decision import ParseError

    if not isinstance(raw_name, str):
        return ParseError(message="The action must be the name of a tool, as a string.")
    name = named_tool(clean_tool_name(raw_name), tools)
    if name is None:
        shown = clean_tool_name(raw_name)[:80] or "(nothing)"
        return ParseError(message=f'"{shown}" is not a tool name: the action must be exactly one tool name.')
    tool = find_tool(tools, name)
    arguments = unwrapped_arguments(coerce_arguments(raw_arguments, tool), tool)
    return tool_calls([(call_id, tool.name if tool else name, arguments)], thought=thought, note="; ".join(notes or []))


def tool_calls(
    calls: list[tuple[str, str, dict[str, Any]]], *, thought: str = "", note: str = ""
) -> ToolCalls | ParseError:
    """A `ToolCalls` decision from (id, name, arguments) triples, or a parse error if one is invalid."""
    from stepwise.models.decision import ParseError, ToolCalls

    try:
        built = [ToolCall(id=call_id, name=name, arguments=arguments) for call_id, name, arguments in calls]
        return ToolCalls(calls=built, thought=thought.strip(), note=note)
    except ValidationError as exc:
        problem = describe_problems(exc, top_level="")
        return ParseError(message=f"Your tool call could not be used ({problem}).")
