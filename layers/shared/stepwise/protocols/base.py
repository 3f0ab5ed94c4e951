"""The protocol interface, and what the four text protocols share in building requests and parsing."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Literal

from stepwise.config.language import Language
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolCall, ToolSpec
from stepwise.protocols.prompts import corrective_text, final_round_order, text_system_prompt, wording_for
from stepwise.protocols.wording import ProtocolWording

if TYPE_CHECKING:
    # Reading a reply (its decisions, the native parser, the reasoning and call scanners) loads with the first
    # reply read: a step that only builds requests (Compact's summary, LLMCall's request) never loads it.
    from stepwise.models.decision import Decision, ParseError

ProtocolName = Literal["function_calling", "react_json", "react_text", "xml", "markers"]
TEXT_PROTOCOLS: tuple[ProtocolName, ...] = ("react_json", "react_text", "xml", "markers")
EMPTY_REPLY = "Your reply was empty."
REASONING_ONLY = (
    "Your reply held only your reasoning and no answer after it (was it cut off by the length limit?). "
    "Reason briefly, then write your decision after the reasoning."
)
# Parsing is linear, but a reply this long is no answer anyone reads: the rest is not parsed.
MAX_PARSED_CHARS = 100_000
# What reading a reply uses (`Protocol.parse`), imported by the first reply read.
_READING_MODULES = (
    "stepwise.models.decision",
    "stepwise.protocols.native",
    "stepwise.protocols.shapes",
    "stepwise.protocols.think_blocks",
    "stepwise.protocols.turn_tokens",
)


def load_reading() -> None:
    """Import what reading a reply uses, for a step whose every call reads one (Parse): in the container's
    init, as its own imports are, rather than inside its first call."""
    for module in _READING_MODULES:
        importlib.import_module(module)


class Protocol(ABC):
    """How tools are offered to a model and how its answer is read back into one `Decision`."""

    name: ProtocolName
    wording: ProtocolWording

    @abstractmethod
    def build_request(
        self,
        *,
        system_prompt: str,
        history: list[ChatMessage],
        tools: list[ToolSpec],
        final_round: bool,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        language: Language = "en",
    ) -> ChatRequest:
        """The request for one model call, from the canonical history.

        In the final round no tools are offered and the model is told to answer now. `language` picks
        the language of what Stepwise itself says (format, final-round order).
        """

    def parse(
        self, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
    ) -> Decision:
        """Read a completion into tool calls, a final answer or a parse error; never raises.

        Reasoning written into the text (`<think>` blocks) is split off first: what a model thought is never
        read for actions or an answer. End-of-turn tokens decoded at the end of the text (and a leading
        recipient line) are dropped.
        """
        from stepwise.models.decision import ParseError
        from stepwise.protocols.think_blocks import without_reasoning
        from stepwise.protocols.turn_tokens import without_turn_tokens

        reply = without_turn_tokens(without_reasoning(completion))
        if not reply.content.strip() and not reply.tool_calls and reply.reasoning:
            return ParseError(message=REASONING_ONLY)
        return self.parse_reply(reply, tools, call_id_prefix=call_id_prefix)

    @abstractmethod
    def parse_reply(
        self, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
    ) -> Decision:
        """Read a completion whose reasoning is already split off."""

    def corrective_message(self, error: ParseError, language: Language = "en") -> str:
        """The observation sent back after a parse error: what was wrong and the exact expected format."""
        return corrective_text(error.message, wording_for(self.name, language), language)


class TextProtocol(Protocol):
    """A protocol where the tools and the format live in the prompt and calls are read from the text."""

    stop_sequences: tuple[str, ...] = ("\nObservation:",)

    def build_request(
        self,
        *,
        system_prompt: str,
        history: list[ChatMessage],
        tools: list[ToolSpec],
        final_round: bool,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        language: Language = "en",
    ) -> ChatRequest:
        """System prompt with tools and format, history rendered as text; tool_choice does not apply."""
        offered = [] if final_round else tools
        wording = wording_for(self.name, language)
        system = text_system_prompt(system_prompt, offered, wording, language)
        messages = [ChatMessage(role="system", content=system)]
        for message in self.render_history(history):
            append_merging_users(messages, message)
        if final_round:
            append_merging_users(messages, ChatMessage(role="user", content=final_round_order(wording, language)))
        return ChatRequest(
            messages=messages,
            stop=list(self.stop_sequences),
            max_tokens=max_tokens,
            temperature=temperature,
        )

    def render_history(self, history: list[ChatMessage]) -> list[ChatMessage]:
        """Canonical messages as this protocol's text: calls as written, tool results as observations."""
        rendered: list[ChatMessage] = []
        results: list[ChatMessage] = []
        for message in history:
            if message.role == "tool":
                results.append(message)
                continue
            if results:
                rendered.append(ChatMessage(role="user", content=self.render_observations(results)))
                results = []
            if message.role == "assistant" and message.tool_calls:
                # The stored text is what the model wrote; re-rendering is only for calls made natively.
                text = message.content.strip() or self.render_tool_calls(message.tool_calls)
                rendered.append(ChatMessage(role="assistant", content=text))
            else:
                rendered.append(ChatMessage(role=message.role, content=message.content, images=message.images))
        if results:
            rendered.append(ChatMessage(role="user", content=self.render_observations(results)))
        return rendered

    def render_observations(self, results: list[ChatMessage]) -> str:
        """Tool results as the observation text the model expects."""
        if len(results) == 1:
            return f"Observation: {results[0].content}"
        return "\n\n".join(f"Observation ({result.name or 'tool'}): {result.content}" for result in results)

    def parse_reply(
        self, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
    ) -> Decision:
        """Read the text; native tool calls, should a provider send them anyway, are taken as they are."""
        from stepwise.models.decision import ParseError
        from stepwise.protocols.arguments import final_answer
        from stepwise.protocols.native import parse_native
        from stepwise.protocols.shapes import is_plain_prose

        if completion.tool_calls:
            return parse_native(completion, tools)
        text = completion.content
        if not text.strip():
            return ParseError(message=EMPTY_REPLY)
        read = text[:MAX_PARSED_CHARS]
        decision = self.parse_text(read, tools, f"{call_id_prefix}_0")
        if isinstance(decision, ParseError) and completion.reasoning and is_plain_prose(read):
            # A reasoning model that thought in its reasoning block and then simply answered.
            decision = final_answer(read, "")
        return decision if len(text) <= MAX_PARSED_CHARS else with_cap_note(decision, len(text))

    @abstractmethod
    def parse_text(self, text: str, tools: list[ToolSpec] | None, call_id: str) -> Decision:
        """Read a non-empty completion text; `call_id` is the id to give the (first) tool call."""

    @abstractmethod
    def render_tool_calls(self, calls: list[ToolCall]) -> str:
        """Tool calls written in this protocol's format, for calls that have no stored text."""


def append_merging_users(messages: list[ChatMessage], message: ChatMessage) -> None:
    """Append a message, merging it into the previous one when both are user messages.

    Providers such as Bedrock Converse require user and assistant turns to alternate.
    """
    if messages and message.role == "user" and messages[-1].role == "user":
        merged = f"{messages[-1].content}\n\n{message.content}".strip()
        messages[-1] = ChatMessage(role="user", content=merged, images=messages[-1].images + message.images)
    else:
        messages.append(message)


def with_cap_note(decision: Decision, length: int) -> Decision:
    """A decision read from the first `MAX_PARSED_CHARS` characters only, saying so where it is shown."""
    from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls

    note = f"only the first {MAX_PARSED_CHARS} of {length} characters of the reply were read"
    if isinstance(decision, ToolCalls):
        return decision.model_copy(update={"note": "; ".join(filter(None, [decision.note, note]))})
    if isinstance(decision, FinalAnswer):
        return decision.model_copy(update={"text": f"{decision.text}\n[{note}]"})
    return ParseError(message=f"{decision.message} ({note.capitalize()}.)")
