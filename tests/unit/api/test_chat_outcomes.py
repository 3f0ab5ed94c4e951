"""What a chat completion answers for each outcome of its run: the answer, a partial answer marked as one,
or the HTTP error of a run without an answer (the provider's 429 passed through, else 502); and which error
answers the openai SDK retries on its own."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from aws_lambda_powertools.event_handler import Response
from openai import OpenAI
from openai.types.chat import ChatCompletion as SdkChatCompletion

from stepwise.models.run import RunError
from stepwise.steps.api.chat import chat_completion_of
from stepwise.steps.api.errors import error_response
from stepwise.steps.api.problems import (
    ApiError,
    ApprovalNotPending,
    ApprovalStale,
    CannotPause,
    IdempotencyConflict,
    IdempotencyInProgress,
    NotPaused,
    NotWaitingBudget,
    ProviderRateLimited,
    RunEnded,
    RunFailed,
)
from tests.unit.api.conftest import ApiWorld

SUMMARY = "The run stopped (max_iterations) before the model gave a final answer.\nWhat the tools returned:\n- t: 42"


def test_a_partial_answer_is_length_with_its_stop_reason_and_outcome_which_the_sdk_reads(world: ApiWorld) -> None:
    # Given a run a limit stopped after a tool returned
    store = world.services.runtime.store
    meta = store.finish_run(
        world.queued_run(), "SUCCEEDED", stop_reason="max_iterations", outcome="partial", answer=SUMMARY
    )
    # When it is answered as a chat completion
    completion = chat_completion_of(store, meta, model="default", created=0)
    # Then the answer is the summary, cut short as OpenAI says it (`length`), and `stepwise` says why
    body = json.loads(completion.model_dump_json())
    assert (body["choices"][0]["finish_reason"], body["choices"][0]["message"]["content"]) == ("length", SUMMARY)
    assert body["stepwise"] == {"outcome": "partial", "stop_reason": "max_iterations"}
    # And the openai SDK parses it, keeping the field it does not know
    parsed = SdkChatCompletion.model_validate(body)
    assert parsed.choices[0].finish_reason == "length"
    assert (parsed.model_extra or {})["stepwise"] == {"outcome": "partial", "stop_reason": "max_iterations"}


def _failed(world: ApiWorld, error: RunError) -> ApiError:
    store = world.services.runtime.store
    meta = store.finish_run(world.queued_run(), "FAILED", stop_reason="deadline", outcome="none", error=error)
    with pytest.raises(ApiError) as refused:
        chat_completion_of(store, meta, model="default", created=0)
    return refused.value


def test_a_run_ended_by_the_providers_rate_limit_is_429_with_its_wait(world: ApiWorld) -> None:
    # Given a run that FAILED on a provider's 429 that asked for 6.2 s
    message = "model m: HTTP 429 rate_limit_exceeded: slow down (retry after 6.2 s)"
    error = RunError(type="LLMDeadlineReached", message=message, provider_status=429, retry_after_seconds=6.2)
    # When it is answered as a chat completion
    refused = _failed(world, error)
    response = error_response(refused)
    # Then it is the provider's 429, its wait rounded up to whole seconds, the provider's error named
    assert isinstance(refused, ProviderRateLimited)
    assert (response.status_code, response.headers["Retry-After"]) == (429, "7")
    assert message in refused.message and refused.details["outcome"] == "none"


def test_a_run_ended_by_another_provider_error_is_502_naming_it(world: ApiWorld) -> None:
    # Given a run that FAILED on a model that never answered in time
    error = RunError(type="LLMDeadlineReached", message="model m: no response within 5s (ReadTimeout)")
    # When it is answered as a chat completion
    refused = _failed(world, error)
    # Then it is 502 naming the error, and not to be resent
    assert isinstance(refused, RunFailed) and refused.status == 502
    assert "LLMDeadlineReached: model m: no response within 5s" in refused.message
    assert error_response(refused).headers["x-should-retry"] == "false"


def _headers(response: Response[Any]) -> dict[str, str]:
    """A Powertools response's headers as the SDK's HTTP client takes them (the openai SDK's httpx2)."""
    return {name: str(value) for name, value in (response.headers or {}).items()}


CONFLICTS = [IdempotencyConflict, RunEnded, ApprovalNotPending, ApprovalStale, NotWaitingBudget, CannotPause, NotPaused]


@pytest.mark.parametrize("conflict", CONFLICTS, ids=[conflict.type for conflict in CONFLICTS])
def test_a_conflict_a_resend_would_meet_again_is_one_the_openai_sdk_does_not_retry(conflict: type[ApiError]) -> None:
    # Given a 409 about what the store holds (a resend of the same request meets it again)
    response = error_response(conflict("conflict"))
    # When the openai SDK decides whether to retry it (it retries a bare 409 as a lock timeout)
    sdk = OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    # Then it does not
    assert response.status_code == 409
    assert sdk._should_retry(httpx2.Response(409, headers=_headers(response))) is False


def test_a_key_whose_first_request_is_still_handled_is_retried_after_its_wait() -> None:
    # Given the 409 of an Idempotency-Key whose first request is still being handled
    response = error_response(IdempotencyInProgress("in progress"))
    # When the openai SDK decides, then it retries, after the second the answer names
    sdk = OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    assert sdk._should_retry(httpx2.Response(409, headers=_headers(response))) is True
    assert (response.headers or {})["Retry-After"] == "1"
