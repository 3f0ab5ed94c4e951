"""What a reply looks like before it is read: an action that could not be read, plain prose, both decisions.

Shared by the text protocols so that they answer the same shapes the same way: a block that is clearly an
action but whose JSON is broken is a parse error naming the problem (never a final answer); an action and
a final answer in one reply is an error the model can act on (LangChain refuses it, LlamaIndex takes the
action).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from stepwise.models.decision import ParseError
from stepwise.protocols.keywords import find_keywords
from stepwise.protocols.lenient_json import StringTracker, strip_code_fence

# A quoted JSON key naming an action: only JSON written as an action block has one.
ACTION_KEY = re.compile(r"""["'](?:action|tool|tool_?name)["']\s*:""", re.IGNORECASE)
# Each run of spaces read once (`*+`): the two around an optional newline split a run of spaces every way.
FENCED_JSON = re.compile(r"```[ \t]*+json[ \t]*+\n?[ \t]*+\{|```[ \t]*+\n[ \t]*+\{", re.IGNORECASE)
# The tags and markers of the XML and marker protocols. The spaces around a tag's `/` are read once (`\s*+`):
# split between the two runs every way, a `<` and 10,000 spaces cost 5.6 s.
_TAGGED_DECISION = re.compile(
    r"<\s*+/?\s*+(?:action|tool|tool[_-]?input|final[_-]?answer|thought|observation)\b|/\*\s*[A-Z][A-Z _-]*\*/",
    re.IGNORECASE,
)
# A reply that only says what the model is about to do.
INTENT_ONLY = re.compile(r"\s*(?:I will|I'll|I am going to|I'm going to)\b", re.IGNORECASE)
BOTH_DECISIONS = (
    "Your reply has both an action and a final answer. Write either one action and stop to wait for its "
    "result, or only the final answer."
)


class BrokenInput(NamedTuple):
    """Tool arguments written as a JSON object that cannot be read, nor repaired without guessing."""

    problem: str

    def error(self, what: str) -> ParseError:
        """The parse error telling the model which arguments could not be read and why."""
        return ParseError(
            message=f"Your {what} could not be read: {self.problem}. Write the tool arguments again as one "
            "complete JSON object."
        )


def broken_block_error(block: str, what: str = "JSON action block") -> ParseError:
    """The parse error for an action block whose JSON cannot be read, saying what is wrong with it."""
    return ParseError(
        message=f"Your {what} could not be read: {json_problem(block)}. Write it again as one complete JSON "
        'object {"action": "<tool name>", "action_input": {...}}.'
    )


def json_problem(block: str) -> str:
    """What is wrong with a JSON object that cannot be read: cut off, or where the decoder stopped."""
    body = strip_code_fence(block).strip()
    start = body.find("{")
    body = body[start:] if start >= 0 else body
    if _is_cut_off(body):
        return "it is cut off before its closing brace (was the reply too long?)"
    return _json_problem(body)


def _is_cut_off(body: str) -> bool:
    """True when the JSON text ends inside a string, object or array (a reply stopped mid-block)."""
    depth = 0
    strings = StringTracker('"')
    for char in body:
        if not strings.outside(char):
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return bool(strings.open_quote) or depth > 0


def _json_problem(body: str) -> str:
    """What the JSON decoder says is wrong, with where."""
    try:
        json.loads(body)
    except ValueError as exc:
        return f"it is not valid JSON ({exc})"
    return "it is not one JSON object naming the tool"


def has_action_key(text: str) -> bool:
    """True when the text holds a quoted action key, the mark of a JSON action block."""
    return ACTION_KEY.search(text) is not None


def is_plain_prose(text: str) -> bool:
    """True for text written in no protocol at all: no labels, tags, markers or action block, and more than
    an announcement of what the model will do."""
    return not (
        find_keywords(text)
        or has_action_key(text)
        or FENCED_JSON.search(text)
        or _TAGGED_DECISION.search(text)
        or INTENT_ONLY.match(text)
    )
