"""A run's outcome: read back for runs stored before outcomes were recorded, and the provider's status and
wait carried through the state machine's error text."""

from __future__ import annotations

import json

import pytest

from stepwise.llm.provider_errors import openai_error, retry_after_seconds
from stepwise.steps.best_answer import limit_summary
from stepwise.steps.outcome import outcome_of
from stepwise.steps.run_outcomes import run_error


@pytest.mark.parametrize(
    ("status", "stop_reason", "answer", "outcome"),
    [
        ("SUCCEEDED", "final_answer", "Rain.", "answered"),
        ("SUCCEEDED", "tool_calls", "Calling the client's tools: get_weather.", "answered"),
        ("SUCCEEDED", "max_iterations", "The run stopped (max_iterations)…\n- get_weather: rain", "partial"),
        ("SUCCEEDED", "deadline", limit_summary([], "deadline", "en"), "none"),
        ("SUCCEEDED", "model_error", limit_summary([], "model_error", "zh"), "none"),
        ("FAILED", "error", None, "none"),
        ("CANCELLED", "cancelled", None, "none"),
        ("RUNNING", None, None, None),
    ],
)
def test_a_run_stored_before_outcomes_gets_its_own_from_status_stop_reason_and_answer(
    status: str, stop_reason: str | None, answer: str | None, outcome: str | None
) -> None:
    # When the outcome of a run stored without one is read, then it is what its end shows
    assert outcome_of(status, stop_reason, None, answer) == outcome


def test_a_recorded_outcome_is_read_as_recorded() -> None:
    assert outcome_of("SUCCEEDED", "deadline", "partial", limit_summary([], "deadline", "en")) == "partial"


def test_a_providers_status_and_wait_survive_the_state_machine_as_text() -> None:
    # Given a provider's 429 that asked for 20 s, raised by the model call
    raised = openai_error("gpt-4o", 429, "rate_limit_exceeded", "Rate limit reached", retry_after=20)
    # When it reaches FormatFailure as Lambda reports it (a JSON cause), after the deadline left no more time
    cause = json.dumps({"errorMessage": f"{raised} (no time left before the run's deadline to try again)"})
    error = run_error("LLMDeadlineReached", cause)
    # Then the stored error keeps the message, the provider's status and its wait
    assert (error.provider_status, error.retry_after_seconds) == (429, 20)
    assert error.message.startswith("model gpt-4o: HTTP 429 rate_limit_exceeded: Rate limit reached")


def test_an_error_that_is_no_providers_names_no_status() -> None:
    assert run_error("States.Runtime", "HTTP 429 in a message").provider_status is None


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "7"}, 7),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
def test_the_wait_a_provider_asks_for_is_read_in_seconds_or_as_a_date(headers: dict[str, str], wait: float) -> None:
    # 2015-10-21 07:28:00 UTC, ten seconds before the date above
    assert retry_after_seconds(headers, now=1445412480.0) == wait
