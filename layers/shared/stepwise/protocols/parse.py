"""One entry point for any completion: raw text, a `Completion` or a provider response dict.

In ``auto`` mode the protocol is detected from the content: native tool calls first, then markers, XML
tags, and whichever of ReAct keyword lines or a JSON action block comes first; a broken JSON action
block is read as one (and answered with a parse error). Text with none of them is a final answer, as in
native function calling.
"""

from __future__ import annotations

import re
from typing import Any

from stepwise.models.decision import Decision, ParseError
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols.base import ProtocolName
from stepwise.protocols.keywords import find_keywords
from stepwise.protocols.provider_responses import completion_from_response, tool_specs_from
from stepwise.protocols.react_json import action_blocks
from stepwise.protocols.registry import find_protocol, get_protocol
from stepwise.protocols.shapes import has_action_key

_MARKER_DECISION = re.compile(r"/\*\s*(?:ACTION|FINAL[ _-]?ANSWER)\s*\*/", re.IGNORECASE)
# Possessive where spaces could be split two ways (quadratic on `<action` and a run of spaces); see xml_tags.
_XML_DECISION = re.compile(r"<\s*+(?:action|tool|tool[_-]?input|final[_-]?answer)(?:\s[^<>]*+)?>", re.IGNORECASE)


def detect_protocol(completion: Completion) -> ProtocolName | None:
    """The protocol a completion is written in, or None for plain text."""
    if completion.tool_calls:
        return "function_calling"
    text = completion.content
    if _MARKER_DECISION.search(text):
        return "markers"
    if _XML_DECISION.search(text):
        return "xml"
    keyword = next((hit.start for hit in find_keywords(text) if hit.kind in ("action", "final_answer")), None)
    block = next((span.start for span in action_blocks(text)), None)
    if keyword is None and block is None:
        # A JSON action block too broken to read is still an action, never a final answer.
        return "react_json" if has_action_key(text) else None
    if block is None or (keyword is not None and keyword < block):
        return "react_text"
    return "react_json"


def parse_completion(
    completion: str | dict[str, Any] | Completion,
    protocol: str = "auto",
    tools: list[ToolSpec] | list[dict[str, Any]] | None = None,
) -> Decision:
    """Read any completion into one decision; never raises (anything unreadable is a `ParseError`).

    `protocol` is a protocol name or ``"auto"``; `tools` (as `ToolSpec` or provider tool dicts) let
    bare inputs and positional arguments be named after the tool's parameters.
    """
    specs = tool_specs_from(tools)
    read = _as_completion(completion)
    if isinstance(read, ParseError):
        return read
    if protocol == "auto":
        detected = detect_protocol(read)
        return get_protocol(detected or "function_calling").parse(read, specs)
    chosen = find_protocol(protocol)
    if chosen is None:
        return ParseError(message=f"Unknown protocol {protocol[:64]!r}.")
    return chosen.parse(read, specs)


def _as_completion(completion: str | dict[str, Any] | Completion) -> Completion | ParseError:
    """Whatever was given, as a `Completion`."""
    if isinstance(completion, Completion):
        return completion
    if isinstance(completion, str):
        return Completion(content=completion)
    if isinstance(completion, dict):
        return completion_from_response(completion)
    return ParseError(message=f"Cannot read a completion of type {type(completion).__name__}.")
