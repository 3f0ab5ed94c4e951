"""Comment markers: ``/*PLANNING*/``, ``/*ACTION*/ {"tool", "parameters"} /*END_ACTION*/``, ``/*FINAL_ANSWER*/``."""

from __future__ import annotations

import json
import re

from stepwise.models.decision import Decision, ParseError
from stepwise.models.messages import ToolCall, ToolSpec
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
from stepwise.protocols.keywords import clean_thought, find_keywords
from stepwise.protocols.lenient_json import find_objects, load_lenient
from stepwise.protocols.prompts import MARKERS
from stepwise.protocols.sections import Section, Tag, find_sections, hallucination_limit, ignored_notes
from stepwise.protocols.shapes import BOTH_DECISIONS, INTENT_ONLY, has_action_key

_MARKER = re.compile(
    r"/\*\s*(?P<end>END[ _-]?)?(?P<name>PLANNING|PLAN|REPLANNING|REASONING|ACTION|FINAL[ _-]?ANSWER|OBSERVATION)\s*\*/",
    re.IGNORECASE,
)
_KINDS = {
    "planning": "thought",
    "plan": "thought",
    "replanning": "thought",
    "reasoning": "thought",
    "action": "action",
    "finalanswer": "final_answer",
}


def _read_marker(match: re.Match[str]) -> Tag:
    """A marker as a `Tag` of one of the protocol's section kinds."""
    kind = _KINDS.get(re.sub(r"[ _-]", "", match.group("name").lower()), "observation")
    return Tag(kind, match.group("end") is not None, match.start(), match.end())


class MarkersProtocol(TextProtocol):
    """Planning, action and final answer between ``/*NAME*/`` and ``/*END_NAME*/`` markers."""

    name: ProtocolName = "markers"
    wording = MARKERS
    stop_sequences = ("\nObservation:", "/*OBSERVATION*/")

    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read the first ACTION or FINAL_ANSWER section."""
        return parse_markers(text, tools, call_id)

    def render_tool_calls(self, calls: list[ToolCall]) -> str:
        """One ACTION section per call."""
        return "\n".join(
            "/*ACTION*/ "
            + json.dumps({"tool": call.name, "parameters": call.arguments}, ensure_ascii=False)
            + " /*END_ACTION*/"
            for call in calls
        )


def parse_markers(text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
    """The decision of the first ACTION or FINAL_ANSWER section."""
    sections = find_sections(text, _MARKER, _read_marker)
    decisive = [s for s in sections if s.kind in ("action", "final_answer")]
    if not decisive:
        if not sections and not find_keywords(text) and not has_action_key(text):
            # trpc-agent's planner, whose markers these are, takes unmarked prose as the final answer,
            # unless it only says what the model is about to do.
            if INTENT_ONLY.match(text):
                return ParseError(
                    message="Your reply says what you will do but does neither: call a tool in an /*ACTION*/ "
                    "section, or answer in a /*FINAL_ANSWER*/ section."
                )
            return final_answer(text, "")
        if sections:
            # trpc-agent does not end a turn on a plan alone either.
            return ParseError(
                message="Your reply has a plan but neither an /*ACTION*/ nor a /*FINAL_ANSWER*/ section: "
                "continue with one of them."
            )
        return ParseError(message="Your reply has neither an /*ACTION*/ nor a /*FINAL_ANSWER*/ section.")
    first = decisive[0]
    thought = _thought(text, sections, first)
    if first.kind == "final_answer":
        return final_answer(first.content, thought)
    limit = hallucination_limit(text, sections, first.end)
    later = [s for s in decisive[1:] if s.start < limit]
    answer = next((s for s in later if s.kind == "final_answer"), None)
    if answer is not None and not _holds_a_call(first.content):
        # An ACTION section of prose only says what the model is doing (Google ADK's planner, whose markers
        # these also are, keeps it as a thought): the final answer after it is the decision.
        return final_answer(answer.content, _thought(text, sections, first))
    if answer is not None:
        return ParseError(message=BOTH_DECISIONS)
    notes = ignored_notes(
        extra_actions=len(later),
        observation_cut=limit < len(text),
    )
    return _action(first.content, tools, call_id, thought, notes)


def _thought(text: str, sections: list[Section], first: Section) -> str:
    """The PLANNING section before the first decision, else the unmarked text before it."""
    planned = next((s.content for s in sections if s.kind == "thought" and s.start < first.start), None)
    return planned.strip() if planned is not None else clean_thought(text[: first.start])


def _holds_a_call(content: str) -> bool:
    """True when an ACTION body holds a JSON object or a function call, readable or not."""
    return "{" in content or parse_call(content.strip()) is not None


def _action(content: str, tools: list[ToolSpec] | None, call_id: str, thought: str, notes: list[str]) -> Decision:
    """The decision for an ACTION body: a JSON object naming the tool, or a function call."""
    action = load_lenient(content)
    if not isinstance(action, dict):
        action = next((span.value for span in find_objects(content)), None)
    if isinstance(action, dict):
        found, name = pick(action, NAME_KEYS)
        if not found:
            return ParseError(message='Your /*ACTION*/ object has no "tool" key naming the tool to call.')
        arguments = pick(action, INPUT_KEYS)[1]
        if isinstance(name, str) and is_final_action(name, tools):
            return final_answer(answer_text(arguments), thought)
        return tool_call(name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
    call = parse_call(content.strip())
    if call is not None and is_final_action(clean_tool_name(call.name), tools):
        return final_answer(answer_text(call.answer()), thought)
    if call is not None:
        arguments = call.arguments(find_tool(tools, clean_tool_name(call.name)))
        return tool_call(call.name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
    return ParseError(
        message="Your /*ACTION*/ section could not be read: it must hold one JSON object "
        '{"tool": "<tool name>", "parameters": {...}}.'
    )
