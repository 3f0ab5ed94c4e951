"""The text of a reply's content blocks, and the tools the provider ran itself among them.

Bedrock's Converse reader takes these, and nothing else of `provider_responses`: apart from it, reading a Converse
reply loads neither the other providers' readers nor, through them, the native parser and the scanners of calls
written in text (a function that calls Bedrock and reads no reply as a decision, as Compact does, never loads them).
"""

from __future__ import annotations

from typing import Any


def passages_text(pieces: list[str | None]) -> str:
    """The reply's text from its pieces in order, None standing for anything else in between (a tool the
    provider ran, its result): pieces next to each other are one text joined as they are, pieces apart are
    passages a paragraph apart (the line breaks a passage already ends or starts with are that paragraph break)."""
    passages: list[str] = []
    adjacent = False
    for piece in pieces:
        if piece is None:
            adjacent = False
        elif adjacent:
            passages[-1] += piece
        else:
            passages.append(piece)
            adjacent = True
    text = ""
    for passage in [passage for passage in passages if passage]:
        text = text.rstrip("\n") + "\n\n" + passage.lstrip("\n") if text else passage
    return text


def blocks_text(blocks: list[Any]) -> str:
    """The reply's text in Converse or Anthropic content blocks: text blocks and the generated text of Converse
    ``citationsContent`` blocks. Adjacent ones are one text, split where a citation starts or ends, often
    mid-sentence: they are joined as they are. Text on both sides of another block (a tool the provider ran,
    its result) is two passages, a paragraph apart."""
    pieces: list[str | None] = []
    for block in [block for block in blocks if isinstance(block, dict)]:
        texts = _block_texts(block)
        pieces.extend([None] if texts is None else texts)
    return passages_text(pieces)


def _block_texts(block: dict[str, Any]) -> list[str] | None:
    """The text pieces of a text or ``citationsContent`` block; None for any other block."""
    if isinstance(block.get("text"), str) and block.get("type", "text") == "text":
        return [block["text"]]
    cited = block.get("citationsContent")
    if not isinstance(cited, dict):
        return None
    generated = cited.get("content")
    parts = generated if isinstance(generated, list) else []
    return [part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)]


def is_server_tool_use(tool_use: dict[str, Any]) -> bool:
    """True for a Converse ``toolUse`` the provider ran itself (``type: server_tool_use``, Nova's web
    grounding): its result is in the same message, so it is recorded, not called."""
    return tool_use.get("type") == "server_tool_use"


# Anthropic's blocks for tools it runs itself: its server tools (web search, code execution) and MCP connector tools.
_ANTHROPIC_SERVER_BLOCKS = ("server_tool_use", "mcp_tool_use")


def server_tool_names(blocks: list[Any]) -> list[str]:
    """The names of the tools the provider ran itself among Converse or Anthropic content blocks, in order."""
    names: list[str] = []
    for block in [block for block in blocks if isinstance(block, dict)]:
        if isinstance(block.get("toolUse"), dict) and is_server_tool_use(block["toolUse"]):
            names.append(str(block["toolUse"].get("name") or "unnamed"))
        elif block.get("type") in _ANTHROPIC_SERVER_BLOCKS:
            names.append(str(block.get("name") or "unnamed"))
    return names
