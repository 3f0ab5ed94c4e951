"""The native tools API: tools travel in the request, calls come back as structured tool calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepwise.config.language import Language
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolSpec
from stepwise.protocols.base import Protocol, ProtocolName, append_merging_users
from stepwise.protocols.prompts import NATIVE, final_round_order, wording_for

if TYPE_CHECKING:
    from stepwise.models.decision import Decision


class FunctionCallingProtocol(Protocol):
    """Native function calling (OpenAI tools, Bedrock/Anthropic tool use)."""

    name: ProtocolName = "function_calling"
    wording = NATIVE

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
        """History kept as is (tool messages included); tools, tool_choice and parallel passed natively.

        tool_choice and parallel_tool_calls are dropped when no tools are offered: providers reject
        them without tools.
        """
        offered = [] if final_round else tools
        messages = [ChatMessage(role="system", content=system_prompt)] if system_prompt.strip() else []
        messages.extend(history)
        if final_round:
            order = final_round_order(wording_for(self.name, language), language)
            append_merging_users(messages, ChatMessage(role="user", content=order))
        return ChatRequest(
            messages=messages,
            tools=offered,
            tool_choice=tool_choice if offered else None,
            parallel_tool_calls=parallel_tool_calls if offered else None,
            max_tokens=max_tokens,
            temperature=temperature,
        )

    def parse_reply(
        self, completion: Completion, tools: list[ToolSpec] | None = None, *, call_id_prefix: str = "call"
    ) -> Decision:
        """Tool calls win (the text is the thought); text alone is the final answer, even if it looks
        like a ReAct block (detecting other protocols is only done by `parse_completion` in auto mode).
        """
        from stepwise.protocols.native import parse_native

        return parse_native(completion, tools)
