"""Reading a model's reply into one decision, what `Protocol.parse` does: the decisions, the native parser and the
scanners of reasoning and of calls written in text.

It loads with the first reply read: a step that only builds requests (Compact's summary, LLMCall's request) never
loads it, and Parse, whose every call reads a reply, imports it with its own modules, in the container's init.
"""

from __future__ import annotations

from typing import Protocol

from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.finish import FILTERED_FINISH_REASONS, MALFORMED_FINISH_REASONS
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols.arguments import final_answer
from stepwise.protocols.native import parse_native
from stepwise.protocols.shapes import is_plain_prose
from stepwise.protocols.think_blocks import without_reasoning
from stepwise.protocols.turn_tokens import without_turn_tokens


class ReplyReader(Protocol):
    """What reading needs of a protocol (`stepwise.protocols.base.Protocol`, which calls these functions)."""

    def parse_reply(
        self, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
    ) -> Decision:
        """Read a completion whose reasoning is already split off."""
        ...


class TextReader(Protocol):
    """What reading needs of a text protocol (`stepwise.protocols.base.TextProtocol`)."""

    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read a non-empty completion text; `call_id` is the id to give the (first) tool call."""
        ...


EMPTY_REPLY = "Your reply was empty."
REASONING_ONLY = (
    "Your reply held only your reasoning and no answer after it (was it cut off by the length limit?). "
    "Reason briefly, then write your decision after the reasoning."
)
# Parsing is linear, but a reply this long is no answer anyone reads: the rest is not parsed.
MAX_PARSED_CHARS = 100_000
# Why a reply holds no answer after its reasoning, when the provider says: it could not read a call, or withheld it.
_EMPTY_EXPLAINED = MALFORMED_FINISH_REASONS | FILTERED_FINISH_REASONS


def read_reply(
    protocol: ReplyReader, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
) -> Decision:
    """Read a completion into tool calls, a final answer or a parse error, as `protocol` reads it; never raises.

    Reasoning written into the text (`<think>` blocks) is split off first: what a model thought is never read for
    actions or an answer. End-of-turn tokens decoded at the end of the text (and a leading recipient line) are
    dropped.
    """
    reply = without_turn_tokens(without_reasoning(completion))
    explained = reply.finish_reason in _EMPTY_EXPLAINED
    if not reply.content.strip() and not reply.tool_calls and reply.reasoning and not explained:
        # reasoning and nothing after it: cut off, unless the provider says it withheld or could not read the rest
        return ParseError(message=REASONING_ONLY)
    return protocol.parse_reply(reply, tools, call_id_prefix=call_id_prefix)


def read_text_reply(
    protocol: TextReader, completion: Completion, tools: list[ToolSpec] | None, *, call_id_prefix: str
) -> Decision:
    """Read a text protocol's reply; native tool calls, should a provider send them anyway, are taken as they are."""
    if completion.tool_calls:
        return parse_native(completion, tools)
    text = completion.content
    if not text.strip():
        return ParseError(message=EMPTY_REPLY)
    read = text[:MAX_PARSED_CHARS]
    decision = protocol.parse_text(read, tools, f"{call_id_prefix}_0")
    if isinstance(decision, ParseError) and completion.reasoning and is_plain_prose(read):
        # A reasoning model that thought in its reasoning block and then simply answered.
        decision = final_answer(read, "")
    return decision if len(text) <= MAX_PARSED_CHARS else with_cap_note(decision, len(text))


def with_cap_note(decision: Decision, length: int) -> Decision:
    """A decision read from the first `MAX_PARSED_CHARS` characters only, saying so where it is shown."""
    note = f"only the first {MAX_PARSED_CHARS} of {length} characters of the reply were read"
    if isinstance(decision, ToolCalls):
        return decision.model_copy(update={"note": "; ".join(filter(None, [decision.note, note]))})
    if isinstance(decision, FinalAnswer):
        return decision.model_copy(update={"text": f"{decision.text}\n[{note}]"})
    return ParseError(message=f"{decision.message} ({note.capitalize()}.)")
