"""ReAct with a JSON action block: ``{"action": "<tool>", "action_input": {...}}``."""

from __future__ import annotations

import json

from stepwise.models.decision import Decision, ParseError
from stepwise.models.messages import ToolCall, ToolSpec
from stepwise.protocols.arguments import (
    INPUT_KEYS,
    answer_text,
    final_answer,
    is_final_action,
    pick,
    tool_call,
)
from stepwise.protocols.base import ProtocolName, TextProtocol
from stepwise.protocols.keywords import clean_thought, find_keywords, first_after
from stepwise.protocols.lenient_json import JsonSpan, find_objects
from stepwise.protocols.prompts import REACT_JSON
from stepwise.protocols.react_text import parse_react_text
from stepwise.protocols.sections import ignored_notes
from stepwise.protocols.shapes import ACTION_KEY, BOTH_DECISIONS, FENCED_JSON, broken_block_error
from stepwise.protocols.tool_call_markup import is_call_object

# Narrower than the names accepted inside an explicit action section: a bare "name" key is too common
# in ordinary JSON (an answer about a person) to mark an action block.
ACTION_KEYS = ("action", "tool", "toolname")
# Keys a reply nests its call under, beside its thoughts: AutoGPT's {"thoughts": {...}, "command": {"name",
# "args"}} (LangChain's AutoGPT too) and its later "use_tool": {"name", "arguments"}; an "action" that is an
# object naming the tool.
_WRAPPER_KEYS = ("command", "usetool", "toolcall", "functioncall", "action", "tool")
_WRAPPED_ARGUMENT_KEYS = ("args", "arguments", "parameters", "params", "input", "actioninput")


class ReactJsonProtocol(TextProtocol):
    """Thought, then one fenced JSON action block; the final answer is the "Final Answer" action."""

    name: ProtocolName = "react_json"
    wording = REACT_JSON

    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read the first JSON action block; without one, accept ReAct keyword lines."""
        return parse_react_json(text, tools, call_id)

    def render_tool_calls(self, calls: list[ToolCall]) -> str:
        """One fenced JSON block per call."""
        return "\n".join(
            "```json\n"
            + json.dumps({"action": call.name, "action_input": call.arguments}, ensure_ascii=False)
            + "\n```"
            for call in calls
        )


def action_blocks(text: str) -> list[JsonSpan]:
    """The JSON objects of a text that name an action, in order (a call nested beside thoughts as the action)."""
    return [_unwrapped(span) for span in find_objects(text) if _is_action(span.value)]


def _is_action(value: dict[str, object]) -> bool:
    return _wrapped_call(value) is not None or pick(value, ACTION_KEYS)[0]


def _wrapped_call(value: dict[str, object]) -> dict[str, object] | None:
    """The call an object nests under a wrapper key (AutoGPT's "command"): an object with a name and its
    arguments; None when there is none."""
    found, inner = pick(value, _WRAPPER_KEYS)
    if not found or not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
        return None
    return inner if pick(inner, _WRAPPED_ARGUMENT_KEYS)[0] else None


def _unwrapped(span: JsonSpan) -> JsonSpan:
    """The span with its nested call in place of the wrapper, or as it is."""
    inner = _wrapped_call(span.value)
    return span if inner is None else span._replace(value=inner)


def _decision_blocks(text: str) -> list[JsonSpan]:
    """The action blocks, and the call objects (``{"name": ..., "arguments": ...}``, as smolagents and models
    trained on native calls write them) that stand in their place."""
    return [_unwrapped(span) for span in find_objects(text) if _is_action(span.value) or is_call_object(span.value)]


def _action_name(block: JsonSpan) -> object:
    """What a block names as its action: its action key, else a call object's name."""
    found, action = pick(block.value, ACTION_KEYS)
    return action if found else block.value.get("name", block.value.get("tool_name"))


def parse_react_json(text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
    """The decision of the first action block, with notes on what else the reply held."""
    blocks = _decision_blocks(text)
    if not blocks or _is_action_input(text, blocks[0]):
        return _without_block(text, tools, call_id)
    first = blocks[0]
    thought = clean_thought(text[: first.start]) or _written_thought(text, first)
    action = _action_name(first)
    _, action_input = pick(first.value, INPUT_KEYS)
    if isinstance(action, str) and is_final_action(action, tools):
        return final_answer(answer_text(action_input), thought)
    hits = find_keywords(text)
    observation = first_after(hits, "observation", first.end)
    limit = observation.start if observation else len(text)
    later = [_action_name(block) for block in blocks[1:] if block.start < limit]
    finals = sum(isinstance(name, str) and is_final_action(name, tools) for name in later)
    keyword_final = first_after(hits, "final_answer", first.end)
    if finals or (keyword_final is not None and keyword_final.start < limit):
        return ParseError(message=BOTH_DECISIONS)
    notes = ignored_notes(
        extra_actions=len(later),
        observation_cut=observation is not None,
    )
    return tool_call(action, action_input, tools=tools, call_id=call_id, thought=thought, notes=notes)


def _written_thought(text: str, block: JsonSpan) -> str:
    """The thought an AutoGPT reply writes beside its call: "thoughts" (its "text") or "thought"."""
    outer = next((span.value for span in find_objects(text[block.start :])), {})
    _, thoughts = pick(outer, ("thoughts", "thought"))
    if isinstance(thoughts, dict):
        thoughts = thoughts.get("text")
    return thoughts.strip() if isinstance(thoughts, str) else ""


def _is_action_input(text: str, block: JsonSpan) -> bool:
    """True when the first object is the arguments under an ``Action Input:`` line (which may name an
    "action" of its own), not an action block."""
    labels = [hit for hit in find_keywords(text) if hit.start < block.start]
    return len(labels) >= 2 and labels[-1].kind == "action_input" and labels[-2].kind == "action"


def _without_block(text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
    """No readable action block: keyword lines are accepted, else say what is missing or broken."""
    hits = find_keywords(text)
    if any(hit.kind in ("action", "final_answer") for hit in hits):
        return parse_react_text(text, tools, call_id)
    keyword_lines = parse_react_text(text, tools, call_id)
    if not isinstance(keyword_lines, ParseError):
        # labels written on one line ("Thought: ... Final Answer: 42")
        return keyword_lines
    key = ACTION_KEY.search(text) or FENCED_JSON.search(text)
    if key is not None:
        fence = text.rfind("```", 0, key.start() + 1)
        brace = text.rfind("{", 0, key.start() + 1)
        return broken_block_error(text[max(fence, brace, 0) :])
    return ParseError(message="Your reply has no JSON action block.")
