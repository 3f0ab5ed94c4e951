"""Gemini's own response shapes: generateContent's candidates and the Interactions API's steps.

generateContent answers with ``candidates[0].content.parts`` (text parts, those marked ``thought`` being its
reasoning, and ``functionCall`` parts) and says why it stopped in ``finishReason``; a candidate stopped by a
safety filter or a malformed function call has no content at all, and a prompt Gemini blocked has no
candidate, only ``promptFeedback.blockReason``. Those are empty replies that keep the provider's reason.

The Interactions API answers with ``steps`` (``outputs`` before May 2026): ``model_output`` steps hold the text
(``text`` outputs in the legacy shape), ``thought`` steps the reasoning summary, ``function_call`` steps the calls
to make, and ``*_call`` / ``*_result`` steps the tools Gemini ran itself (search, code execution, URL context...);
a ``user_input`` step echoes the request and is no part of the reply.
"""

from __future__ import annotations

from typing import Any

from stepwise.models.decision import ParseError
from stepwise.models.messages import Completion, ReasoningBlock
from stepwise.protocols.content_blocks import passages_text
from stepwise.protocols.reply_parts import RawCall, build_completion, part_texts

# The parts of a tool Gemini ran itself within its reply: the code it wrote, then what running it printed.
_GEMINI_RAN = frozenset({"executableCode", "codeExecutionResult"})


def completion_from_gemini(response: dict[str, Any], call_id_prefix: str) -> Completion | ParseError:
    """A generateContent response; a candidate without parts is an empty reply when Gemini says why."""
    candidates = response.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else {}
    reason = _stop_reason(response, first)
    content = first.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        if reason is None:
            return ParseError(message="The response has no candidates[0].content.parts.")
        return Completion(content="", finish_reason=reason, finish_message=_finish_message(first))
    pieces: list[str | None] = []
    thoughts: list[ReasoningBlock] = []
    calls: list[RawCall] = []
    for part in [part for part in parts if isinstance(part, dict)]:
        call = part.get("functionCall")
        if isinstance(call, dict):
            calls.append((call.get("id"), call.get("name"), call.get("args")))
        elif _GEMINI_RAN.intersection(part):
            # Code Gemini ran and its output stand between two passages of the answer, not inside a sentence.
            pieces.append(None)
        elif isinstance(part.get("text"), str):
            if part.get("thought") is True:
                thoughts.append(ReasoningBlock(text=part["text"]))
            else:
                pieces.append(part["text"])
    completion = build_completion(passages_text(pieces), calls, call_id_prefix, thoughts)
    if isinstance(completion, Completion):
        completion = completion.model_copy(update={"server_tools": _tools_gemini_ran(first, parts)})
    return _with_reason(completion, reason, _finish_message(first))


def _tools_gemini_ran(candidate: dict[str, Any], parts: list[Any]) -> list[str]:
    """The tools Gemini ran itself for this candidate: code it executed (``executableCode`` parts), the
    searches its grounding made (``groundingMetadata.webSearchQueries``) and the pages it read
    (``urlContextMetadata``)."""
    ran = ["code_execution" for part in parts if isinstance(part, dict) and "executableCode" in part]
    grounding = candidate.get("groundingMetadata")
    searched = grounding.get("webSearchQueries") if isinstance(grounding, dict) else None
    ran += ["google_search"] if isinstance(searched, list) and searched else []
    return ran + (["url_context"] if isinstance(candidate.get("urlContextMetadata"), dict) else [])


def _finish_message(candidate: dict[str, Any]) -> str | None:
    """The candidate's ``finishMessage`` (Gemini's detail of a stop, such as the call it could not read)."""
    message = candidate.get("finishMessage")
    return message if isinstance(message, str) and message.strip() else None


def _stop_reason(response: dict[str, Any], candidate: dict[str, Any]) -> str | None:
    """The candidate's ``finishReason``, else the prompt's ``blockReason`` (Gemini blocked the request)."""
    reason = candidate.get("finishReason")
    if isinstance(reason, str) and reason:
        return reason
    feedback = response.get("promptFeedback")
    blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
    return blocked if isinstance(blocked, str) and blocked else None


# The step types only the Interactions API writes, which name a response that lost its ``object`` field.
_INTERACTION_STEPS = frozenset({"model_output", "user_input", "thought"})


def is_interaction(response: dict[str, Any]) -> bool:
    """True for an Interactions API response: ``object: interaction``, or ``steps`` of the API's own types."""
    if response.get("object") == "interaction":
        return True
    steps = response.get("steps")
    kinds = [step.get("type") for step in steps if isinstance(step, dict)] if isinstance(steps, list) else []
    return any(isinstance(kind, str) and kind in _INTERACTION_STEPS for kind in kinds)


def completion_from_interaction(response: dict[str, Any], call_id_prefix: str) -> Completion | ParseError:
    """An Interactions API response: its steps (or legacy outputs) as text, calls, reasoning and the tools
    Gemini ran. Texts next to each other are one text; texts apart by another step are paragraphs apart."""
    steps = response.get("steps", response.get("outputs"))
    if not isinstance(steps, list):
        return ParseError(message="The interaction has no steps.")
    pieces: list[str | None] = []
    calls: list[RawCall] = []
    thoughts: list[ReasoningBlock] = []
    server_tools: list[str] = []
    for step in [step for step in steps if isinstance(step, dict)]:
        kind = step.get("type")
        pieces.append(_output_text(step))
        if kind == "thought":
            summary = "\n\n".join(part_texts(step.get("summary")))
            thoughts.extend([ReasoningBlock(text=summary)] if summary else [])
        elif kind == "function_call":
            calls.append((step.get("id"), step.get("name"), step.get("arguments")))
        elif isinstance(kind, str) and kind.endswith("_call"):
            server_tools.append(kind.removesuffix("_call"))
    completion = build_completion(passages_text(pieces), calls, call_id_prefix, thoughts)
    if not isinstance(completion, Completion):
        return completion
    status = response.get("status")
    return completion.model_copy(
        update={"server_tools": server_tools, "finish_reason": status if isinstance(status, str) else None}
    )


def _output_text(step: dict[str, Any]) -> str | None:
    """The text of a ``model_output`` step (its text parts) or of a legacy ``text`` output; None for any other."""
    kind = step.get("type")
    if kind == "model_output":
        parts = step.get("content")
        found = [part.get("text") for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
        return "".join(text for text in found if isinstance(text, str))
    if kind == "text" and isinstance(step.get("text"), str):
        return str(step["text"])
    return None


def _with_reason(
    completion: Completion | ParseError, reason: str | None, message: str | None = None
) -> Completion | ParseError:
    if isinstance(completion, Completion) and reason is not None:
        return completion.model_copy(update={"finish_reason": reason, "finish_message": message})
    return completion
