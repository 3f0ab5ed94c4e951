"""ReAct in plain text: ``Thought:``, ``Action:``, ``Action Input:``, ``Final Answer:`` lines."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

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
    is_no_action,
    pick,
    tool_call,
)
from stepwise.protocols.base import ProtocolName, TextProtocol
from stepwise.protocols.call_syntax import keyword_arguments, parse_call
from stepwise.protocols.keywords import KeywordHit, clean_thought, find_keywords, first_after, section
from stepwise.protocols.lenient_json import close_cut_off, find_objects, load_lenient, scan_value, strip_code_fence
from stepwise.protocols.prompts import REACT_TEXT
from stepwise.protocols.sections import ignored_notes
from stepwise.protocols.shapes import BOTH_DECISIONS, BrokenInput, broken_block_error, json_problem

# The original ReAct paper's style: ``Search[Paris]``, and ``Finish[answer]`` for its answer.
_FENCE_LANGUAGE = re.compile(r"^```[A-Za-z][\w+.-]*[ \t]+(?=\S)")
_BRACKET_CALL = re.compile(r"^(?P<name>[^\s\[\]]+)\s*\[(?P<input>.*)\]$", re.DOTALL)
# Several of them on one action line ("Search[A], Search[B]", "Search[A] and Lookup[b]"): each bracket holds no
# bracket of its own, so one item never runs into the next.
_BRACKET_ITEM = re.compile(r"(?P<name>[A-Za-z_][\w.-]*+)[ \t]*+\[(?P<input>[^\[\]\n]*+)\]")
# The paper's bracket action with its bracket never closed ("search[what is Bob Marley known for?").
_UNCLOSED_BRACKET = re.compile(r"[A-Za-z_][\w.-]*+[ \t]*+\[[^\]]*+\Z")
_ITEM_SEPARATOR = re.compile(r"[ \t]*+(?:[,;&]|and|then)?[ \t]*+", re.IGNORECASE)
# A whole reply in one code fence (the closing one may have been cut off).
_WHOLE_FENCE = re.compile(r"\s*```[\w+.-]*[ \t]*\n(?P<body>.*?)(?:\n[ \t]*```\s*)?", re.DOTALL)
# The start of an "Observation:" label on the reply's last line, cut by the token limit ("\nObs"): the
# observation the model began to write, never part of what came before it.
_CUT_OBSERVATION = re.compile(r"\n[ \t]*+Obs(?:e(?:r(?:v(?:a(?:t(?:i(?:o(?:n)?)?)?)?)?)?)?)?[ \t]*\Z", re.IGNORECASE)
# A final answer written on the action's own line: both decisions at once.
_INLINE_FINAL = re.compile(r"\bFinal[ _-]?Answer\s*[:\uff1a]", re.IGNORECASE)
# A decisive label written on the line of the thought before it: "Thought: I know it. Final Answer: 42". The
# spaces around a number are read once (`*+`): split between the two runs every way, a label then 10,000 spaces
# cost 0.9 s.
_INLINE_LABEL = re.compile(
    r"(?:(?<=\S)[ \t]+|(?<=[.!?\u3002]))"
    r"(?=(?:Final Answer|Action Input|Action|Tool Input|Tool|Observation)[ \t]*+\d*+[ \t]*+[:\uff1a])"
)


class ReactTextProtocol(TextProtocol):
    """Thought / Action / Action Input / Final Answer lines."""

    name: ProtocolName = "react_text"
    wording = REACT_TEXT
    stop_sequences = ("\nObservation:", "\nObservation\uff1a")

    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read the first ``Action:`` or ``Final Answer:`` and what belongs to it."""
        return parse_react_text(text, tools, call_id)

    def render_tool_calls(self, calls: list[ToolCall]) -> str:
        """``Action:`` and ``Action Input:`` lines, one pair per call."""
        return "\n".join(
            f"Action: {call.name}\nAction Input: {json.dumps(call.arguments, ensure_ascii=False)}" for call in calls
        )


def parse_react_text(text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
    """The decision written with ReAct keyword lines; shared with the JSON protocol as its fallback."""
    text = _CUT_OBSERVATION.sub("", _unfenced(text))
    hits = find_keywords(text)
    decisive = _decisive(text, hits)
    if not decisive:
        # The labels may all be on one line: "Thought: I know it now. Final Answer: 42".
        text = _INLINE_LABEL.sub("\n", text)
        hits = find_keywords(text)
        decisive = _decisive(text, hits)
    if not decisive:
        return ParseError(message="Your reply has neither an 'Action:' line nor a 'Final Answer:' line.")
    first_index = decisive[0]
    first = hits[first_index]
    # Reasoning ends at the first Action line, even an "Action: None" that was skipped.
    thought_end = next(hit.start for hit in hits if hit.kind in ("action", "final_answer"))
    thought = clean_thought(text[:thought_end])
    if first.kind == "final_answer":
        return final_answer(_answer(text, hits, first_index), thought)
    observation = first_after(hits, "observation", first.end)
    limit = observation.start if observation else len(text)
    later = [hit for hit in hits[first_index + 1 :] if hit.start < limit]
    if any(hit.kind == "final_answer" for hit in later):
        return ParseError(message=BOTH_DECISIONS)
    notes = ignored_notes(
        extra_actions=sum(hit.kind == "action" for hit in later),
        observation_cut=observation is not None,
    )
    raw_input = _action_input(text, hits, first_index)
    return _action(section(text, hits, first_index), raw_input, tools, call_id, thought, notes)


def _decisive(text: str, hits: list[KeywordHit]) -> list[int]:
    """The indexes of the labels that decide: final answers, and actions that name a tool."""
    return [
        index
        for index, hit in enumerate(hits)
        if hit.kind == "final_answer" or (hit.kind == "action" and not _names_no_tool(text, hits, index))
    ]


def _unfenced(text: str) -> str:
    """The reply inside a code fence that wraps all of it, when what it wraps is written with labels."""
    whole = _WHOLE_FENCE.fullmatch(text)
    if whole is None or not find_keywords(whole.group("body")):
        return text
    return whole.group("body")


def _answer(text: str, hits: list[KeywordHit], index: int) -> str:
    """The final answer of label `index`: everything to the end, as an answer may hold code, JSON or lines
    that look like labels, unless the reply repeats its Final Answer, when the last one is the answer."""
    repeats = [hit for hit in hits[index + 1 :] if hit.kind == "final_answer" and _spelled_out(text, hit)]
    start = repeats[-1].end if repeats else hits[index].end
    answer = text[start:].rstrip()
    if answer.endswith("```") and answer.count("```") % 2:
        # The closing fence of a fence opened before the answer.
        answer = answer[:-3]
    return answer


def _spelled_out(text: str, hit: KeywordHit) -> bool:
    """True for a "Final Answer" label (not LlamaIndex's bare "Answer", which answers may hold)."""
    label = text[hit.start : hit.end].casefold()
    return "final" in label or "最终" in label


def _names_no_tool(text: str, hits: list[KeywordHit], index: int) -> bool:
    """True for an ``Action: None`` line, which models write before a final answer."""
    lines = section(text, hits, index).splitlines()
    return bool(lines) and is_no_action(clean_tool_name(lines[0]))


def _action_input(text: str, hits: list[KeywordHit], action_index: int) -> Any:
    """The value of the ``Action Input:`` right after the action, or None when there is none."""
    following = action_index + 1
    if following >= len(hits) or hits[following].kind != "action_input":
        return None
    return read_input_text(section(text, hits, following))


def read_input_text(raw: str) -> Any:
    """Action input text as a value: JSON (fenced or not, even with prose after it), else the text.

    An object that cannot be read is never passed on as text: cut off after a complete value it is closed
    (the one reading there is), otherwise it is a `BrokenInput` saying what is wrong.
    """
    decoded = load_lenient(raw)
    if decoded is not None:
        return decoded
    body = strip_code_fence(raw).strip()
    if body[:1] in ("{", "["):
        found = scan_value(body, 0)
        if found is not None:
            return found[0]
    if body[:1] == "{":
        repaired = close_cut_off(body)
        return repaired if repaired is not None else BrokenInput(json_problem(body))
    return body


def _action(
    action_text: str,
    raw_input: Any,
    tools: list[ToolSpec] | None,
    call_id: str,
    thought: str,
    notes: list[str],
) -> Decision:
    """The decision for an ``Action:`` line: a tool call, or a final answer given as an action."""
    if action_text.startswith("```") and "{" not in action_text:
        # The tool's name in a fence of its own. A word right after the opening backticks with more text after
        # it on the line is the fence's language ("```json ()```"), never the tool's name.
        action_text = strip_code_fence(_FENCE_LANGUAGE.sub("```", action_text, count=1)).strip()
    if action_text.startswith(("```", "{")):
        # LangChain's structured chat: the action is a JSON block, fenced or not, under "Action:".
        return _action_block(action_text, tools, call_id, thought, notes)
    line = action_text.splitlines()[0].strip() if action_text else ""
    if _INLINE_FINAL.search(line):
        return ParseError(message=BOTH_DECISIONS)
    if isinstance(raw_input, BrokenInput):
        return raw_input.error("'Action Input:'")
    if is_final_action(clean_tool_name(line), tools):
        return final_answer(answer_text(raw_input), thought)
    call = parse_call(line)
    if call is not None and is_final_action(clean_tool_name(call.name), tools):
        # The final answer written as a call of its action, as prompts that ask for finish(answer="...") get it.
        return final_answer(answer_text(raw_input if raw_input is not None else call.answer()), thought)
    if call is not None:
        arguments = raw_input if raw_input is not None else call.arguments(find_tool(tools, call.name))
        return tool_call(call.name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
    listed = _bracket_actions(clean_tool_name(line)) if raw_input is None else []
    if listed:
        return _first_bracket_action(listed, tools, call_id, thought, notes)
    # Words a model wrote after the closing bracket ("search[X] Kevin Durant") are no part of the input.
    bracket = _BRACKET_CALL.match(clean_tool_name(line)) or _BRACKET_ITEM.match(clean_tool_name(line))
    if bracket is not None and raw_input is None:
        name, raw_input = bracket.group("name"), bracket.group("input").strip()
        if is_final_action(name, tools):
            # The paper's own ending, "Finish[answer]", unless a tool of that name is offered.
            return final_answer(answer_text(raw_input), thought)
        return tool_call(name, raw_input, tools=tools, call_id=call_id, thought=thought, notes=notes)
    if isinstance(raw_input, str):
        raw_input = keyword_arguments(raw_input, find_tool(tools, clean_tool_name(line))) or raw_input
    if raw_input is None and _UNCLOSED_BRACKET.match(clean_tool_name(line)):
        return ParseError(
            message=f"Your 'Action: {clean_tool_name(line)[:80]}' opens a bracket it never closes. "
            "Write the whole input and close the bracket, or put the input on an 'Action Input:' line."
        )
    if raw_input is None and line:
        # LangChain and LlamaIndex both refuse an action without its input.
        return ParseError(
            message=f"Your 'Action: {clean_tool_name(line)[:80]}' line has no 'Action Input:' line after it. "
            "Write the tool arguments on an 'Action Input:' line ({} when the tool takes none)."
        )
    return tool_call(line, raw_input, tools=tools, call_id=call_id, thought=thought, notes=notes)


def _bracket_actions(line: str) -> list[tuple[str, str]]:
    """The actions of a line holding several of the paper's bracket actions, or [] for any other line."""
    items = list(_BRACKET_ITEM.finditer(line))
    if len(items) < 2 or items[0].start() != 0 or items[-1].end() != len(line):
        return []
    if any(_ITEM_SEPARATOR.fullmatch(line, one.end(), two.start()) is None for one, two in pairwise(items)):
        return []
    return [(item.group("name"), item.group("input").strip()) for item in items]


def _first_bracket_action(
    listed: list[tuple[str, str]], tools: list[ToolSpec] | None, call_id: str, thought: str, notes: list[str]
) -> Decision:
    """The first of several actions on one line, as with several Action lines; a line that also finishes has
    both decisions."""
    finishing = [is_final_action(name, tools) for name, _ in listed]
    if any(finishing) and not all(finishing):
        return ParseError(message=BOTH_DECISIONS)
    name, raw_input = listed[0]
    if finishing[0]:
        return final_answer(answer_text(raw_input), thought)
    extra = ignored_notes(extra_actions=len(listed) - 1, observation_cut=False)
    return tool_call(name, raw_input, tools=tools, call_id=call_id, thought=thought, notes=[*extra, *notes])


def _action_block(block: str, tools: list[ToolSpec] | None, call_id: str, thought: str, notes: list[str]) -> Decision:
    """An action written as a JSON object under ``Action:``; a fence's language tag is never a tool name."""
    body = strip_code_fence(block)
    value = load_lenient(body)
    if not isinstance(value, dict):
        value = next((span.value for span in find_objects(body)), None)
    if not isinstance(value, dict):
        return broken_block_error(block)
    found, name = pick(value, NAME_KEYS)
    if not found:
        return ParseError(message='Your action block has no "action" key naming the tool to call.')
    arguments = pick(value, INPUT_KEYS)[1]
    if isinstance(name, str) and is_final_action(name, tools):
        return final_answer(answer_text(arguments), thought)
    return tool_call(name, arguments, tools=tools, call_id=call_id, thought=thought, notes=notes)
