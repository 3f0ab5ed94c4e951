"""Replies a provider marked as unusable, read as parse errors the model is told about and can correct.

A reply cut at the output cap in the middle of a tool call carries arguments that were never finished:
running the call would act on half an instruction, and taking the text as the answer would give a
fragment. A tool call Converse flags as malformed, or a 200 with no choice at all, likewise holds nothing
to act on. A call whose arguments the provider layer refused for their size (`models/reply_limits.py`) has
nothing to act on either. Each becomes a corrective observation; the run goes on, and ends at the
parse-error limit with its best answer if the model cannot do better.

A reply the provider's guardrail or content filter stopped is none of these: nothing in it is run or read
for an action, and it is the run's last (`filtered_reply`).
"""

from __future__ import annotations

from stepwise.models.decision import Decision, FinalAnswer, ParseError
from stepwise.models.finish import (
    EMPTY_REPLY,
    FILTERED_FINISH_REASONS,
    FILTERED_NOTICE,
    GUARDRAIL_MESSAGE_FINISH_REASON,
    MALFORMED_FINISH_REASONS,
    TRUNCATED_FINISH_REASONS,
)
from stepwise.models.messages import ToolCall
from stepwise.models.reply_limits import MAX_ARGUMENTS_CHARS, refused_arguments
from stepwise.models.step_record import StepRecord


def reply_problem(step: StepRecord | None, decision: Decision, calls: list[ToolCall]) -> ParseError | None:
    """The parse error to send back for a reply its provider marked unusable, or whose `calls` carry
    arguments refused for their size, else None (read as parsed)."""
    oversized = [(call.name, size) for call in calls if (size := refused_arguments(call)) is not None]
    if oversized:
        name, size = oversized[0]
        others = f" (and {len(oversized) - 1} more calls)" if len(oversized) > 1 else ""
        return ParseError(
            message=f'The arguments of your call to tool "{name}"{others} were {size:,} characters long; the '
            f"tool calls of one reply may carry at most {MAX_ARGUMENTS_CHARS:,} characters of arguments in all, "
            "so nothing was called. Call the tool again with shorter arguments, or split the work into "
            "smaller calls."
        )
    reason = step.finish_reason if step is not None else None
    if reason in TRUNCATED_FINISH_REASONS and (calls or not isinstance(decision, FinalAnswer)):
        cap = f" of {step.output_tokens} tokens" if step is not None and step.output_tokens else ""
        return ParseError(
            message=f"Your reply was cut off at the output limit{cap} before it was complete, so nothing in it "
            "was run. Write a shorter reply: call one tool at a time with short arguments, or give the answer "
            "in fewer words."
        )
    if reason in MALFORMED_FINISH_REASONS:
        return ParseError(
            message="Your last tool call was malformed and could not be read. Call the tool again with "
            "arguments that are a JSON object matching its parameters."
        )
    if reason == EMPTY_REPLY:
        return ParseError(message="Your reply was empty. Call a tool or give the final answer.")
    return None


def is_filtered(step: StepRecord | None) -> bool:
    """True when the provider's guardrail or content filter stopped the reply `step` records."""
    return step is not None and step.finish_reason in FILTERED_FINISH_REASONS


def filtered_reply(step: StepRecord | None, text: str) -> FinalAnswer | None:
    """The answer of a reply the provider's guardrail or content filter stopped, else None: a Bedrock
    guardrail's own message (the reply's text), else a notice; what a content filter stopped is not given."""
    if not is_filtered(step):
        return None
    message = text.strip() if step is not None and step.finish_reason == GUARDRAIL_MESSAGE_FINISH_REASON else ""
    return FinalAnswer(text=message or FILTERED_NOTICE)
