"""The answer stored when a run stops without a final answer: never a thought fragment or a tool name.

At a limit (iterations, deadline, budget, parse errors) or a model error the answer is the last final
answer the model wrote, read the way the run's protocol reads it (prose counts when it carries no protocol
marker at all, as native function calling reads it), else a summary built from what the tools returned,
saying that the run stopped, in the profile's language. With neither there is no answer: the run's outcome
is `none` (`stepwise.steps.outcome`).
"""

from __future__ import annotations

from stepwise.config.language import Language
from stepwise.models.decision import FinalAnswer
from stepwise.models.messages import Completion
from stepwise.models.run import StoredMessage
from stepwise.protocols.base import Protocol
from stepwise.protocols.keywords import find_keywords
from stepwise.protocols.prompts import sentences_for

_SUMMARY_OBSERVATIONS = 5
_OBSERVATION_CHARS = 300


def best_available_answer(
    messages: list[StoredMessage], protocol: Protocol, stop_reason: str, language: Language = "en"
) -> str | None:
    """The last final-answer text of the conversation, else a summary of its observations; None when no
    tool returned anything and the model wrote nothing that reads as an answer."""
    tool_names = {m.name.casefold() for m in messages if m.role == "tool" and m.name}
    tool_names |= {call.name.casefold() for m in messages for call in m.tool_calls}
    for message in reversed(messages):
        if message.role == "assistant":
            text = final_answer_text(message, protocol)
            if text and text.casefold() not in tool_names:
                return text
    if not any(m.role == "tool" and m.content.strip() for m in messages):
        return None
    return limit_summary(messages, stop_reason, language)


def final_answer_text(message: StoredMessage, protocol: Protocol) -> str | None:
    """The final answer a stored model message holds, or None (tool calls, a thought, a broken action)."""
    completion = Completion(content=message.content, tool_calls=message.tool_calls)
    decision = protocol.parse(completion)
    if isinstance(decision, FinalAnswer):
        return decision.text
    if message.tool_calls or not message.content.strip():
        return None
    # detecting a protocol loads every protocol's parser: only prose the run's protocol did not read needs it
    from stepwise.protocols.parse import detect_protocol

    if detect_protocol(completion) is None and not find_keywords(message.content):
        return message.content.strip()
    return None


def limit_summary(messages: list[StoredMessage], stop_reason: str, language: Language) -> str:
    """Says the run stopped before an answer, with the last observations of the tools (without any, what
    runs stored before outcomes were recorded kept as their answer)."""
    sentences = sentences_for(language)
    lines = [sentences.limit_summary.format(reason=stop_reason)]
    observations = [m for m in messages if m.role == "tool" and m.content.strip()][-_SUMMARY_OBSERVATIONS:]
    if not observations:
        lines.append(sentences.limit_no_observation)
        return "\n".join(lines)
    lines.append(sentences.limit_observations)
    for observation in observations:
        content = " ".join(observation.content.split())
        shown = content if len(content) <= _OBSERVATION_CHARS else content[:_OBSERVATION_CHARS] + "…"
        lines.append(f"- {observation.name or 'tool'}: {shown}")
    return "\n".join(lines)
