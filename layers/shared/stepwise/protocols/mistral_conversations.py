"""Mistral's Conversations API (its agents' API): ``{"object": "conversation.response", "outputs": [...]}``.

Each output is an entry: ``message.output`` holds the text (a string, or chunks of which the ``text`` ones are
the reply and ``tool_reference`` ones cite a source), ``function.call`` a call of the caller's function (its
``arguments`` a JSON string), ``tool.execution`` a built-in tool Mistral ran itself (web search, code
interpreter, image generation, document library), and ``agent.handoff`` a hand-over between Mistral's agents.
"""

from __future__ import annotations

from typing import Any

from stepwise.models.decision import ParseError
from stepwise.models.messages import Completion
from stepwise.protocols.content_blocks import passages_text
from stepwise.protocols.reply_parts import RawCall, build_completion


def is_conversation(response: dict[str, Any]) -> bool:
    """True for a Conversations API response."""
    return response.get("object") == "conversation.response" and isinstance(response.get("outputs"), list)


def completion_from_conversation(response: dict[str, Any], call_id_prefix: str) -> Completion | ParseError:
    """The entries of a Conversations API response as text, calls to make and the tools Mistral ran."""
    pieces: list[str | None] = []
    calls: list[RawCall] = []
    server_tools: list[str] = []
    for entry in [entry for entry in response["outputs"] if isinstance(entry, dict)]:
        kind = entry.get("type")
        pieces.append(_message_text(entry.get("content")) if kind == "message.output" else None)
        if kind == "function.call":
            calls.append((entry.get("tool_call_id") or entry.get("id"), entry.get("name"), entry.get("arguments")))
        elif kind == "tool.execution":
            server_tools.append(str(entry.get("name") or "unnamed"))
    completion = build_completion(passages_text(pieces), calls, call_id_prefix, [])
    if isinstance(completion, Completion):
        return completion.model_copy(update={"server_tools": server_tools})
    return completion


def _message_text(content: Any) -> str:
    """A ``message.output``'s text: the string, or its ``text`` chunks joined as they are."""
    if isinstance(content, str):
        return content
    chunks = content if isinstance(content, list) else []
    texts = [chunk.get("text") for chunk in chunks if isinstance(chunk, dict) and chunk.get("type") == "text"]
    return "".join(text for text in texts if isinstance(text, str))
