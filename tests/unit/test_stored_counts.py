"""Counts one step stored are read by every later one, and none may refuse them: each is read in range.

A negative, fractional, textual or absurd count (as a provider sent it before replies were checked, or as
an earlier version stored it) must never fail the next step, ExecutionEnded or the API.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.models.counts import MAX_STORED_COUNT
from stepwise.models.run import RunUsage
from stepwise.models.state import StatePayload, parse_event
from stepwise.models.step_record import StepRecord, usage_of_steps
from stepwise.models.summary import ConversationSummary

COUNTS = [(-5, 0), (12.6, 13), ("40", 40), ("lots", 0), (None, 0), (True, 0), (10**40, MAX_STORED_COUNT)]


def payload_with_spend(**spend: Any) -> dict[str, Any]:
    """A loop payload as IterationGuard passes it on, with `spend` as an earlier step wrote it."""
    run = {"profile": "default", "deadline": 1.0, "expires_at": 2, "max_iterations": 8, "max_parse_errors": 3}
    run |= {"max_parallel_calls": 4, "spend": spend}
    return {"run_id": "r1", "iteration": 2, "run": run, "context": {"sent_tokens": -3, "reply_tokens": "7"}}


@pytest.mark.parametrize(("stored", "read"), COUNTS)
def test_a_spend_the_payload_carries_is_read_in_range(stored: Any, read: int) -> None:
    # Given a payload whose spend and context hold a count no provider could have sent
    event = payload_with_spend(output_tokens=stored, input_tokens=100, cost_usd=-1.0)
    # When the next step validates it; Then it is read, in range, never refused
    payload = parse_event(StatePayload, event)
    assert payload.run is not None and payload.run.spend.output_tokens == read
    assert payload.run.spend.cost_usd is None
    assert (payload.context.sent_tokens, payload.context.reply_tokens) == (0, 7)


@pytest.mark.parametrize(("stored", "read"), COUNTS)
def test_a_stored_usage_and_summary_are_read_in_range(stored: Any, read: int) -> None:
    # Given META's usage and a summary as they were stored; When read back; Then each count is in range
    assert RunUsage.model_validate({"input_tokens": stored, "llm_calls": stored}).llm_calls == read
    note = {"first_iteration": 1, "through_iteration": 2, "tokens_before": 1, "tokens_after": 1}
    note_fields: dict[str, Any] = note | {"source": "model", "reason": "window"}
    summary = {"iteration": 3, "n": 0, "through": 2, "input_tokens": stored, "note": note_fields}
    assert ConversationSummary.model_validate(summary).input_tokens == read


def test_cached_and_reasoning_tokens_are_kept_within_the_totals_they_are_part_of() -> None:
    # Given a model step stored with more cached tokens than input, and more reasoning than output
    step = StepRecord.model_validate(
        {"iteration": 1, "kind": "llm", "input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 150}
        | {"cache_write_tokens": 30, "reasoning_tokens": 10**12}
    )
    # When read; Then the parts are cut to their totals, the cache reads first
    assert (step.cache_read_tokens, step.cache_write_tokens, step.reasoning_tokens) == (100, 0, 20)
    # And a run's usage summed from it keeps them within as well
    usage = usage_of_steps([step.model_copy(update={"latency_ms": 5.0})])
    assert (usage.cache_read_tokens, usage.reasoning_tokens) == (100, 20)
