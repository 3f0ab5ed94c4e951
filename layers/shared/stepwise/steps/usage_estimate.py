"""Usage a provider could not count, replaced by Stepwise's estimate of the call.

A provider marks the usage of a reply it cannot trust (`Usage.unreliable`: counts missing, not numbers,
negative, beyond any window, or contradicting each other; see `stepwise.protocols.usage_fields`) instead of
failing a good reply on it. Every model a step calls is wrapped in `EstimatedUsage` (by
`StepRuntime.chat_model`), which puts the estimate in its place: the request's tokens as
`stepwise.steps.token_estimate` counts them (deliberately high, so budgets err on the safe side), the
reply's text, reasoning and tool calls likewise, nothing read from a cache and no reasoning apart. The
reason stays on the usage: the step records `usage_estimated` in its trace and the call is counted in the
`ModelUsageEstimated` metric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepwise.models.messages import ChatRequest, Completion, Usage
from stepwise.steps.token_estimate import reply_tokens, request_tokens
from stepwise.telemetry.observability import logger, metrics

if TYPE_CHECKING:
    from stepwise.llm.base import ChatModel


def with_estimated_usage(completion: Completion, request: ChatRequest) -> Completion:
    """`completion` as it is when its usage is the provider's count, else with the estimate of `request` and
    its reply in place of that usage (the reason kept)."""
    reason = completion.usage.unreliable
    if reason is None:
        return completion
    estimate = Usage(input_tokens=request_tokens(request), output_tokens=reply_tokens(completion), unreliable=reason)
    return completion.model_copy(update={"usage": estimate})


class EstimatedUsage:
    """A chat model whose completions always carry a usage a step can count: the provider's, or the estimate."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    def complete(self, request: ChatRequest) -> Completion:
        """Call the wrapped model once; a usage it could not count is replaced by the estimate."""
        completion = with_estimated_usage(self._model.complete(request), request)
        if completion.usage.unreliable is not None:
            metrics.add_metric(name="ModelUsageEstimated", unit="Count", value=1)
            logger.warning(
                "the provider's usage could not be used: estimated instead",
                extra={"model": completion.model, "reason": completion.usage.unreliable},
            )
        return completion

    def listed_window(self) -> int | None:
        """The window the wrapped model's server lists for it (`ListsWindow`), or None."""
        from stepwise.llm.base import ListsWindow

        return self._model.listed_window() if isinstance(self._model, ListsWindow) else None


def estimated_usage_note(usage: Usage) -> str:
    """ "; usage estimated (completion_tokens is negative (-5))" for a step's note when the usage is the
    estimate, else nothing."""
    return f"; usage estimated ({usage.unreliable})" if usage.unreliable is not None else ""
