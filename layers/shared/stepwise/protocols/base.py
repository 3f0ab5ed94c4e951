"""The protocol interface, and what the four text protocols share in building requests and parsing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Literal

from stepwise.config.language import Language
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolCall, ToolSpec
from stepwise.protocols.prompts import corrective_text, final_round_order, text_system_prompt, wording_for
from stepwise.protocols.wording import ProtocolWording

if TYPE_CHECKING:
    # Reading a reply loads with the first reply read (`stepwise.protocols.reading`).
    from stepwise.models.decision import Decision, ParseError

ProtocolName = Literal["function_calling", "react_json", "react_text", "xml", "markers"]
TEXT_PROTOCOLS: tuple[ProtocolName, ...] = ("react_json", "react_text", "xml", "markers")


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
        """Read a completion into tool calls, a final answer or a parse error; never raises
        (`stepwise.protocols.reading.read_reply`)."""
        from stepwise.protocols.reading import read_reply

        return read_reply(self, completion, tools, call_id_prefix=call_id_prefix)

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
        from stepwise.protocols.reading import read_text_reply

        return read_text_reply(self, completion, tools, call_id_prefix=call_id_prefix)

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
