"""IterationGuard's foresight: whether the next request could pass the compaction threshold, from the
numbers the payload carries (the guard reads nothing)."""

from __future__ import annotations

from typing import Any

from stepwise.models.state import CallRef, ContextState, StatePayload
from stepwise.steps.context_state import next_request_may_pass_threshold


def payload(iteration: int, calls: int = 1, **context: Any) -> StatePayload:
    sizes: dict[str, Any] = {"sent_tokens": 5000, "reply_tokens": 100, "compact_at": 7500, "observation_tokens": 1400}
    return StatePayload(
        run_id="r",
        iteration=iteration,
        calls=[CallRef(call_id=f"c{n}", name="fetch_page") for n in range(calls)],
        context=ContextState(**(sizes | context)),
    )


def test_a_next_request_that_could_pass_the_threshold_is_compacted_first() -> None:
    # Given a last request of 5,000 tokens and two tool results of up to 1,400 tokens since
    # Then the next request could pass 7,500 tokens
    assert next_request_may_pass_threshold(payload(6, calls=2))


def test_a_next_request_that_cannot_pass_the_threshold_goes_straight_to_the_model() -> None:
    # Given the same request with one tool result since; Then it stays under 7,500 tokens
    assert not next_request_may_pass_threshold(payload(6, calls=1))


def test_a_model_whose_window_is_not_known_is_never_compacted() -> None:
    # Given no threshold (the window is not known); Then nothing is compacted however large the request
    assert not next_request_may_pass_threshold(payload(6, calls=10, compact_at=None))


def test_nothing_is_compacted_when_every_earlier_iteration_is_summarized_already() -> None:
    # Given a summary covering iterations 1 to 5, in iteration 6; Then there is nothing left to summarize
    summarized = {"summary_iteration": 6, "summary_n": 0, "summary_through": 5}
    assert not next_request_may_pass_threshold(payload(6, calls=4, **summarized))
