"""Keeping one model request within the model's context window.

- What a request carries: the run's opening messages (the question, a session's earlier turns), the
  latest summary in place of the iterations it covers, then the messages after them (`rendered_history`).
- How large it is: the prompt tokens the provider reported for the previous call, plus an estimate of
  what was added since, scaled by how that call's count compared with its estimate (`RequestSize`).
- What is done about it (`fit_request`): a request past the profile's threshold is reported so Compact
  can summarize first; one that would not fit with room for the reply has its largest messages cut, each
  with a marker saying so (a huge observation is never sent whole); `max_tokens` is fitted to what is
  left of the window, never below the profile's floor (Dify's `recalc_llm_max_tokens`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stepwise.config.context import ContextLimits
from stepwise.config.language import Language
from stepwise.models.messages import ChatMessage, ChatRequest
from stepwise.models.run import StoredMessage
from stepwise.models.state import ContextState
from stepwise.steps.token_estimate import BYTES_PER_TOKEN, request_tokens, text_tokens

if TYPE_CHECKING:
    from stepwise.models.summary import ConversationSummary

# Never cut a message below this many characters: its start says what it was.
_KEPT_CHARS = 400
_MAX_CUT_ROUNDS = 8
# After the provider said a request was too long although the estimate fitted, estimates are raised by this.
OVERFLOW_SAFETY = 1.25


@dataclass(frozen=True)
class RenderedHistory:
    """The messages a request carries, and how many of the model's turns the summary stands for."""

    messages: list[StoredMessage]
    turns_before: int


def rendered_history(
    history: Sequence[StoredMessage],
    summary: ConversationSummary | None,
    *,
    language: Language,
    summary_tokens: int,
) -> RenderedHistory:
    """The opening messages, the summary (as a user message), then the messages after what it covers.

    The summary covers whole iterations, so a tool call and its result are always on the same side of it.
    """
    if summary is None:
        return RenderedHistory(list(history), 0)
    opening = [message for message in history if message.iteration == 0]
    after = [message for message in history if message.iteration > summary.through]
    turns = sum(1 for message in history if 0 < message.iteration <= summary.through and message.role == "assistant")
    # a compacted run's only: the summary's rendering and the wordings load with the first summary sent
    from stepwise.steps.summary_text import summary_message

    text = summary_message(summary, language, summary_tokens)
    note = StoredMessage(role="user", content=text, iteration=summary.through, slot=-1)
    return RenderedHistory([*opening, note, *after], turns)


@dataclass(frozen=True)
class RequestSize:
    """How this run's requests compare with their estimates, from the payload's context."""

    context: ContextState
    safety: float = 1.0

    @property
    def ratio(self) -> float:
        """The provider's count of the last request over its estimate, never below 1 (estimates stay high)."""
        sent, estimate = self.context.sent_tokens, self.context.sent_estimate
        ratio = sent / estimate if sent and estimate else 1.0
        return max(1.0, ratio) * self.safety

    def tokens(self, estimate: int) -> int:
        """The tokens of a request estimated at `estimate`: the provider's count of the last request plus
        what was added since, when this one extends it; else the estimate, scaled."""
        context = self.context
        if context.anchored and context.sent_tokens and context.sent_estimate is not None:
            return context.sent_tokens + math.ceil((estimate - context.sent_estimate) * self.ratio)
        return math.ceil(estimate * self.ratio)

    def estimate_for(self, tokens: int, current_estimate: int) -> int:
        """The estimate a request must come down to for `tokens`, given its current estimate."""
        offset = self.tokens(current_estimate) - current_estimate * self.ratio
        return math.floor((tokens - offset) / self.ratio)


def overflow_safety(counted: int | None, estimated_tokens: int, at_least: float) -> float:
    """How much to raise estimates after the provider refused a request estimated at `estimated_tokens`:
    by the prompt tokens it says it `counted`, when it says, and at least `at_least`."""
    if counted is None or estimated_tokens <= 0:
        return at_least
    return max(at_least, counted / estimated_tokens * 1.05)


@dataclass(frozen=True)
class FittedRequest:
    """A request made to fit: what it is, its estimate and size, what was cut, and whether it passed the
    compaction threshold before anything was cut."""

    request: ChatRequest
    estimate: int
    tokens: int
    cut_messages: int
    over_threshold: bool


RequestBuilder = Callable[[list[ChatMessage], int | None], ChatRequest]
"""Builds the request for a history and a `max_tokens` (the protocol's rendering)."""


def fit_request(
    build: RequestBuilder,
    history: list[ChatMessage],
    *,
    limits: ContextLimits,
    size: RequestSize,
    asked_max_tokens: int | None,
    language: Language,
) -> FittedRequest:
    """The request for `history`, made to fit the window with room for at least the floor's reply.

    Without a known window it is the request as built. `asked_max_tokens` (the request's, the profile's,
    the model's or the catalog's largest output) is lowered to what the window leaves, not below the floor.
    """
    request = build(history, asked_max_tokens)
    estimate = request_tokens(request)
    tokens = size.tokens(estimate)
    window = limits.window
    if window is None:
        return FittedRequest(request, estimate, tokens, 0, over_threshold=False)
    over = limits.compact_at is not None and tokens > limits.compact_at
    budget = window - limits.min_output
    cut = 0
    messages = list(history)
    for _ in range(_MAX_CUT_ROUNDS):
        if tokens <= budget:
            break
        excess = estimate - size.estimate_for(budget, estimate)
        messages, changed = _cut_largest(messages, excess, language)
        if not changed:
            break
        cut += changed
        request = build(messages, asked_max_tokens)
        estimate = request_tokens(request)
        tokens = size.tokens(estimate)
    if asked_max_tokens is not None:
        floor = min(limits.min_output, asked_max_tokens)
        fitted = max(floor, min(asked_max_tokens, window - tokens))
        if fitted != asked_max_tokens:
            request = request.model_copy(update={"max_tokens": fitted})
    return FittedRequest(request, estimate, tokens, cut, over_threshold=over)


def _cut_largest(messages: list[ChatMessage], excess_tokens: int, language: Language) -> tuple[list[ChatMessage], int]:
    """Cut the largest messages (never the system prompt) by about `excess_tokens`, each with a marker;
    how many were cut (0 when none can be cut any more)."""
    # a request that does not fit is rare: its wordings (every language's markers) load with the first cut
    from stepwise.steps.context_wording import context_wording

    wording = context_wording(language)
    remaining = excess_tokens
    cut = 0
    result = list(messages)
    candidates = sorted(
        (index for index, message in enumerate(result) if message.role != "system"),
        key=lambda index: len(result[index].content.encode("utf-8", errors="replace")),
        reverse=True,
    )
    for index in candidates:
        if remaining <= 0:
            break
        content = result[index].content
        encoded = content.encode("utf-8", errors="replace")
        marker_bytes = len(wording.cut_marker.format(count=len(content)).encode("utf-8"))
        keep_bytes = len(encoded) - (remaining * BYTES_PER_TOKEN + marker_bytes)
        kept = encoded[: max(keep_bytes, _KEPT_CHARS)].decode("utf-8", errors="ignore")
        if len(kept) >= len(content) - 1 or len(content) <= _KEPT_CHARS:
            continue
        removed = len(content) - len(kept)
        result[index] = result[index].model_copy(update={"content": kept + wording.cut_marker.format(count=removed)})
        remaining -= text_tokens(content) - text_tokens(result[index].content)
        cut += 1
    return result, cut


def cut_to(text: str, tokens: int, language: Language) -> str:
    """`text` cut to about `tokens` (never below a few hundred characters), with the marker saying how much
    was cut; `text` itself when it fits."""
    if text_tokens(text) <= tokens:
        return text
    from stepwise.steps.context_wording import context_wording

    wording = context_wording(language)
    keep_bytes = max(_KEPT_CHARS, tokens * BYTES_PER_TOKEN - len(wording.cut_marker.encode("utf-8")) - 16)
    kept = text.encode("utf-8", errors="replace")[:keep_bytes].decode("utf-8", errors="ignore")
    return kept + wording.cut_marker.format(count=len(text) - len(kept))
