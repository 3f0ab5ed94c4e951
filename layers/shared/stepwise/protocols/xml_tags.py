"""XML tags: ``<thought>``, ``<action>tool(name="v", 3)</action>``, ``<final_answer>``."""

from __future__ import annotations

import html
import json
import re

from stepwise.models.decision import Decision, ParseError
from stepwise.models.messages import ChatMessage, ToolCall, ToolSpec
from stepwise.protocols.arguments import (
    INPUT_KEYS,
    NAME_KEYS,
    answer_text,
    clean_tool_name,
    final_answer,
    find_tool,
    is_final_action,
    pick,
    tool_call,
)
from stepwise.protocols.base import ProtocolName, TextProtocol
from stepwise.protocols.call_syntax import parse_call
from stepwise.protocols.keywords import clean_thought
from stepwise.protocols.lenient_json import load_lenient, strip_code_fence
from stepwise.protocols.prompts import XML
from stepwise.protocols.react_text import read_input_text
from stepwise.protocols.sections import Section, Tag, find_sections, hallucination_limit, ignored_notes
from stepwise.protocols.shapes import BOTH_DECISIONS, BrokenInput

_KINDS = {
    "thought": "thought",
    "thinking": "thought",
    "action": "action",
    "actioninput": "action_input",
    # LangChain's XML agent: <tool>search</tool><tool_input>weather</tool_input>
    "tool": "action",
    "toolinput": "action_input",
    "finalanswer": "final_answer",
    "answer": "final_answer",
    "observation": "observation",
}
# Possessive (`*+`) wherever two parts could share the same characters: `<` then spaces, or a name then
# spaces, was tried in every split once no `>` followed, quadratic in the run of spaces.
_TAG = re.compile(
    r"<\s*+(?P<closing>/)?\s*+(?P<name>thought|thinking|action[_-]?input|action|tool[_-]?input|tool|final[_-]?answer|"
    r"answer|observation)(?:\s[^<>]*+)?>",
    re.IGNORECASE,
)
_QUOTE = re.compile("[\"']")
_ESCAPED_QUOTE = re.compile(r"&(?:quot|apos|#34|#39|#x22|#x27);", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d+|#x[0-9a-f]+);", re.IGNORECASE)
_ANY_TAG = re.compile(r"</?\s*+\w[\w-]*+(?:\s[^<>]*+)?>")


def _read_tag(match: re.Match[str]) -> Tag:
    """A pattern match as a `Tag` of one of the protocol's section kinds."""
    kind = _KINDS[re.sub(r"[_-]", "", match.group("name").lower())]
    return Tag(kind, match.group("closing") is not None, match.start(), match.end())


class XmlTagsProtocol(TextProtocol):
    """Thought, action and final answer in XML tags; arguments written as a function call."""

    name: ProtocolName = "xml"
    wording = XML
    stop_sequences = ("<observation>", "\nObservation:")

    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read the first ``<action>`` or ``<final_answer>`` section."""
        return parse_xml(text, tools, call_id)

    def render_tool_calls(self, calls: list[ToolCall]) -> str:
        """One ``<action>name(key=value, ...)</action>`` per call, values as JSON literals."""
        return "\n".join(
            "<action>"
            + call.name
            + "("
            + ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items())
            + ")</action>"
            for call in calls
        )

    def render_observations(self, results: list[ChatMessage]) -> str:
        """Tool results in ``<observation>`` tags, named by tool when there are several."""
        if len(results) == 1:
            return f"<observation>{results[0].content}</observation>"
        return "\n".join(
            f'<observation tool="{result.name or "tool"}">{result.content}</observation>' for result in results
        )


def parse_xml(text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
    """The decision of the first action or final-answer section."""
    sections = find_sections(text, _TAG, _read_tag)
    decisive = [s for s in sections if s.kind in ("action", "final_answer")]
    if not decisive:
        if any(s.kind == "action_input" for s in sections):
            # LangChain refuses a tool input without the tool it is for.
            return ParseError(message="Your reply has a <tool_input> tag but no <tool> tag naming the tool.")
        return ParseError(message="Your reply has neither an <action> tag nor a <final_answer> tag.")
    first = decisive[0]
    thought = _thought(text, sections, first)
    if first.kind == "final_answer":
        content = html.unescape(first.content) if _ENTITY.search(first.content) else first.content
        return final_answer(content, thought)
    limit = hallucination_limit(text, sections, first.end)
    later = [s for s in decisive[1:] if s.start < limit]
    if any(s.kind == "final_answer" for s in later):
        return ParseError(message=BOTH_DECISIONS)
    notes = ignored_notes(
        extra_actions=len(later),
        observation_cut=limit < len(text),
    )
    after = sections[sections.index(first) + 1 :]
    action_input = next((s.content for s in after[:1] if s.kind == "action_input"), None)
    if action_input is None and after[:1] and after[0].kind == "action" and "(" not in first.content:
        # LangChain refuses several bare tool names in a row: which one the input is for is unclear.
        return ParseError(
            message=f"Your reply names {1 + len(later)} tools before any input: write one <tool> tag, "
            "then its <tool_input>."
        )
    return _action(first.content, action_input, tools, call_id, thought, notes)


def _thought(text: str, sections: list[Section], first: Section) -> str:
    """The ``<thought>`` before the first decision, else the untagged text before it."""
    tagged = next((s.content for s in sections if s.kind == "thought" and s.start < first.start), None)
    if tagged is not None:
        return tagged.strip()
    return clean_thought(_ANY_TAG.sub("", text[: first.start]))


def _action(
    content: str,
    action_input: str | None,
    tools: list[ToolSpec] | None,
    call_id: str,
    thought: str,
    notes: list[str],
) -> Decision:
    """The decision for an ``<action>`` body: a call, a JSON action object, or a bare tool name."""
    body = strip_code_fence(content.strip()).strip().strip("`").strip()
    if body.startswith("{"):
        action = load_lenient(body)
        if isinstance(action, dict):
            found, name = pick(action, NAME_KEYS)
            if found:
                arguments = pick(action, INPUT_KEYS)[1]
                return tool_call(name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
    if _ESCAPED_QUOTE.search(body) and not _QUOTE.search(body):
        # Some models escape the quotes of their arguments as XML entities. A call that has real quotes
        # is read as written, so an argument whose text holds an entity keeps it.
        body = html.unescape(body)
    call = parse_call(body)
    if call is not None and is_final_action(clean_tool_name(call.name), tools):
        return final_answer(answer_text(call.answer()), thought)
    if call is not None:
        arguments = call.arguments(find_tool(tools, clean_tool_name(call.name)))
        return tool_call(call.name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
    if "(" in body:
        return ParseError(
            message='The call in your <action> tag could not be read: write tool_name(parameter="value"), '
            'with text values in double quotes and quotes inside them escaped as \\".'
        )
    if action_input is not None and _ENTITY.search(action_input):
        action_input = html.unescape(action_input)
    raw_input = read_input_text(action_input) if action_input is not None else None
    if isinstance(raw_input, BrokenInput):
        return raw_input.error("<tool_input>")
    if is_final_action(clean_tool_name(body), tools):
        return final_answer(answer_text(raw_input), thought)
    return tool_call(body, raw_input, tools=tools, call_id=call_id, thought=thought, notes=notes)
