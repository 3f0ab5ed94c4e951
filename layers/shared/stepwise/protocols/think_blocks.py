"""Reasoning written into a reply's text, split off before anything reads the reply.

Reasoning models served raw (Ollama, vLLM or llama.cpp without a reasoning parser, a gateway passing text
through) write their thinking into the content, between tags the chat template defines: `<think>` (DeepSeek-R1,
Qwen3, QwQ, GLM, MiniMax, Nemotron...), `<thinking>`, `<seed:think>` (Seed-OSS), `[THINK]` (Magistral),
`◁think▷` (Kimi), `<|START_THINKING|>` (Command A, whose reply then comes in `<|START_RESPONSE|>`), `<reasoning>`
(gpt-oss on Bedrock: InvokeModel and its OpenAI-compatible endpoint put the reasoning before the answer), or
Granite's "Here is my thought process:" lines. What they think mentions actions, JSON blocks, tags and answers
they then decide against, so it is never read as the reply.

The block is found the way reasoning parsers find it (vLLM's, llama.cpp's): at the start of the reply,
closed or not (a reply cut off while thinking is all reasoning); with only its closing tag, when the chat
template wrote the opening one into the prompt; or at the start of a later line, for models that think
again between tool calls. A tag written inside prose is left alone. No library does this for arbitrary
text (the parsers above work on token ids of one model family each), hence this module.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from stepwise.models.messages import Completion, ReasoningBlock
from stepwise.protocols.harmony import call_markup, read_harmony
from stepwise.protocols.tool_call_markup import call_opening_position

# (opening, closing) tag pairs; the closing tag alone ends reasoning the template opened.
_PAIRS: tuple[tuple[str, str], ...] = (
    (r"<think>", r"</think>"),
    (r"<thinking>", r"</thinking>"),
    (r"<seed:think>", r"</seed:think>"),
    (r"\[THINK\]", r"\[/THINK\]"),
    (r"◁think▷", r"◁/think▷"),
    (r"<\|START_THINKING\|>", r"<\|END_THINKING\|>"),
    (r"<reasoning>", r"</reasoning>"),
)
_OPENING = re.compile("|".join(f"(?P<o{index}>{opening})" for index, (opening, _) in enumerate(_PAIRS)), re.IGNORECASE)
_CLOSING = [re.compile(closing, re.IGNORECASE) for _, closing in _PAIRS]
# A closing tag quoted in prose (`</think>`, "</think>") closes nothing.
_ANY_CLOSING = re.compile(r"(?<![`'\"])(?:" + "|".join(closing for _, closing in _PAIRS) + ")", re.IGNORECASE)
_BLANK = re.compile(r"\s*")
# An opening tag that starts a line: a later block of reasoning, not a tag quoted in prose.
_LINE_OPENING = re.compile(r"(?:^|\n)[ \t]*(?=" + _OPENING.pattern + ")", re.IGNORECASE)
# IBM Granite 3.2's plain-text sections.
_GRANITE_THOUGHT = re.compile(r"\s*Here(?:'s| is) my thought process:")
_GRANITE_RESPONSE = re.compile(r"Here(?:'s| is) my response:")
# Cohere Command's reply wrapper and its inline citations.
_COHERE_RESPONSE = "<|START_RESPONSE|>"
_COHERE_END = "<|END_RESPONSE|>"
_COHERE_CITATION = re.compile(r"<co>(?P<text>[^<]*+)</co:[^>]*+>")


# gpt-oss's channel names as a reply decoded without its special tokens shows them (its final message's header,
# "<|start|>assistant<|channel|>final<|message|>", becomes "assistantfinal").
_STRIPPED_ANALYSIS = "analysis"
_STRIPPED_FINAL = "assistantfinal"


class SplitReply(NamedTuple):
    """A reply's text with its reasoning taken out.

    `unclosed` is True when the reply ended inside a reasoning block: it was cut off (by `max_tokens`) while
    the model was still thinking, so whatever follows the reasoning is not a reply.
    """

    reasoning: str
    reply: str
    unclosed: bool = False


def split_reasoning(text: str) -> SplitReply:
    """The reasoning blocks of `text` (joined by blank lines) and the reply without them."""
    harmony = _split_harmony(text) or _split_stripped_harmony(text)
    if harmony is not None:
        return harmony
    granite = _split_granite(text)
    if granite is not None:
        return granite
    thoughts: list[str] = []
    position = 0
    leading = True
    pieces: list[str] = []
    while True:
        opening = _next_opening(text, position, leading)
        if opening is None:
            break
        start, body_start, pair = opening
        closing = _CLOSING[pair].search(text, body_start)
        pieces.append(text[position:start])
        if closing is None:
            # Qwen3.5 and later sometimes open their call without closing their thinking: the call's opening
            # ends the thinking (as vLLM's and llama.cpp's parsers take it); a block cut off is all thinking.
            call = call_opening_position(text, body_start)
            if call is not None:
                thoughts.append(text[body_start:call].strip())
                return SplitReply(_joined(thoughts), _unwrapped("".join(pieces) + text[call:], True))
            thoughts.append(text[body_start:].strip())
            return SplitReply(_joined(thoughts), _unwrapped("".join(pieces), bool(thoughts)), unclosed=True)
        thoughts.append(text[body_start : closing.start()].strip())
        position = closing.end()
        leading = leading and not pieces[-1].strip()
    rest = text[position:]
    if not thoughts:
        # Only a closing tag: the chat template opened the block in the prompt, so the reply starts thinking.
        closing_only = _ANY_CLOSING.search(rest)
        if closing_only is None or _OPENING.search(rest, 0, closing_only.start()) is not None:
            return SplitReply("", _unwrapped(text, False))
        return SplitReply(rest[: closing_only.start()].strip(), _unwrapped(rest[closing_only.end() :], True))
    return SplitReply(_joined(thoughts), _unwrapped("".join(pieces) + rest, True))


def _next_opening(text: str, position: int, leading: bool) -> tuple[int, int, int] | None:
    """(where the tag starts, where its body starts, which pair) of the next reasoning block, or None.

    While nothing but reasoning came before, a block may open right after whitespace; otherwise it must
    open a line.
    """
    blank = _BLANK.match(text, position)
    match = _OPENING.match(text, blank.end() if blank else position) if leading else None
    if match is None:
        line = _LINE_OPENING.search(text, position)
        match = _OPENING.match(text, line.end()) if line is not None else None
    if match is None:
        return None
    pair = next(index for index in range(len(_PAIRS)) if match.group(f"o{index}") is not None)
    return match.start(), match.end(), pair


def _joined(thoughts: list[str]) -> str:
    return "\n\n".join(thought for thought in thoughts if thought)


def _unwrapped(reply: str, after_reasoning: bool) -> str:
    """The reply without Hunyuan's `<answer>` wrapper (which only follows a reasoning block) or Cohere Command's
    `<|START_RESPONSE|>` one (whose `<co>cited text</co: 0:[1]>` citation tags keep only the cited text)."""
    body = reply.strip()
    if body.startswith(_COHERE_RESPONSE):
        body = body[len(_COHERE_RESPONSE) :].removesuffix(_COHERE_END).strip()
        return _COHERE_CITATION.sub(lambda match: match.group("text"), body)
    if not after_reasoning or body[:8].lower() != "<answer>":
        return reply
    body = body[8:]
    if body[-9:].lower() == "</answer>":
        body = body[:-9]
    return body.strip()


def _split_granite(text: str) -> SplitReply | None:
    """Granite's "Here is my thought process: ... Here is my response: ..." sections; None for other text."""
    thought = _GRANITE_THOUGHT.match(text)
    if thought is None:
        return None
    response = _GRANITE_RESPONSE.search(text, thought.end())
    if response is None:
        return SplitReply(text[thought.end() :].strip(), "", unclosed=True)
    return SplitReply(text[thought.end() : response.start()].strip(), text[response.end() :].lstrip())


def _split_stripped_harmony(text: str) -> SplitReply | None:
    """gpt-oss's reply decoded with its special tokens skipped: ``analysis`` then the reasoning, then
    ``assistantfinal`` then the answer, the channel names glued to the text around them; None for other text."""
    start = len(text) - len(text.lstrip())
    if not text.startswith(_STRIPPED_ANALYSIS, start):
        return None
    final = text.find(_STRIPPED_FINAL, start)
    if final < 0:
        return None
    reasoning = text[start + len(_STRIPPED_ANALYSIS) : final].strip()
    return SplitReply(reasoning, text[final + len(_STRIPPED_FINAL) :])


def _split_harmony(text: str) -> SplitReply | None:
    """gpt-oss's channels, when a raw harmony reply reaches us; None for any other text.

    The analysis channel is the reasoning. Calls (messages addressed to a tool) are what the model decided, so
    the reply is the calls, after what the model told the user before them; without calls it is the final
    channel, else what is left (nothing when the reply was cut off while thinking)."""
    harmony = read_harmony(text)
    if harmony is None:
        return None
    messages = harmony.messages
    thoughts = _joined([message.body.strip() for message in messages if message.channel == "analysis"])
    said = [message.body.strip() for message in messages if message.channel not in ("analysis", "final")]
    calls = [call_markup(message) for message in messages if message.recipient]
    finals = [message.body for message in messages if message.channel == "final" and not message.recipient]
    if calls:
        before = [harmony.lead.strip()] + [
            message.body.strip() for message in messages if message.channel == "commentary" and not message.recipient
        ]
        reply = _joined([*before, "\n".join(calls)])
    elif finals:
        reply = finals[-1]
    else:
        reply = _joined([harmony.lead.strip(), *said])
    last = messages[-1]
    return SplitReply(thoughts, reply, unclosed=last.channel == "analysis" and not last.ended)


def without_reasoning(completion: Completion) -> Completion:
    """The completion with the reasoning written into its text moved to its `reasoning` blocks."""
    split = split_reasoning(completion.content)
    if not split.reasoning and split.reply == completion.content:
        return completion
    blocks = [ReasoningBlock(text=split.reasoning)] if split.reasoning else []
    return completion.model_copy(update={"content": split.reply.strip(), "reasoning": [*completion.reasoning, *blocks]})
