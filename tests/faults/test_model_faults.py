"""Model faults at the wire (a fake OpenAI-compatible server on loopback), through the local engine.

Transient faults (429, 5xx, a reply slower than the model's timeout, a 200 that is not a completion)
are retried by the state machine until the run succeeds; a rejected request, or transient faults past
the retry budget, end the run FAILED with the error stored. Either way the conversation holds exactly
the question and the replies the model really gave.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.conftest import EnvironmentStarter
from tests.faults.harness import (
    MODEL_TIMEOUT_SECONDS,
    RUNS_PER_SCENARIO,
    SLOW_REPLY_TIMEOUT_SECONDS,
    CountCheck,
    ask_and_judge,
    openai_model,
    settle,
    write_config,
)
from tests.faults.outcomes import ExpectedRun, question, reply
from tests.support.openai_server import Body, FakeOpenAIServer, chat_completion

QUESTION = "What is the capital of France?"
RATE_LIMITED = {"error": {"message": "Rate limit reached, retry later", "type": "rate_limit_exceeded"}}
# The state machine retries LLMTransientError 4 times: 5 attempts in all.
ATTEMPTS_BUDGET = 5


@dataclass(frozen=True)
class FaultyReply:
    """One reply the fake model server gives before the good one."""

    status: int
    body: Body
    delay_seconds: float = 0.0


TRANSIENT_FAULTS = {
    "model: 429 burst of 3, then an answer": [FaultyReply(429, RATE_LIMITED)] * 3,
    "model: HTTP 500 twice, then an answer": [FaultyReply(500, {"error": {"message": "upstream failed"}})] * 2,
    "model: reply slower than its timeout, then an answer": [
        FaultyReply(200, chat_completion(content="Too late."), delay_seconds=SLOW_REPLY_TIMEOUT_SECONDS * 3)
    ],
    "model: malformed 200 bodies (not JSON, cut short, no choices), then an answer": [
        FaultyReply(200, "<html><body>502 Bad Gateway</body></html>"),
        FaultyReply(200, '{"id": "chatcmpl-1", "choices": [{"message": {"content": "Par'),
        FaultyReply(200, {"id": "chatcmpl-2", "object": "chat.completion", "model": "fake-model"}),
    ],
}


@pytest.mark.parametrize("scenario", list(TRANSIENT_FAULTS))
def test_transient_model_faults_are_retried_until_the_run_succeeds(
    scenario: str,
    model_server: FakeOpenAIServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given a model that answers each run only after the scenario's faulty replies (with a timeout its slow
    # reply, if it has one, exceeds)
    faults = TRANSIENT_FAULTS[scenario]
    slow = any(fault.delay_seconds for fault in faults)
    timeout = SLOW_REPLY_TIMEOUT_SECONDS if slow else MODEL_TIMEOUT_SECONDS
    environment, _ = start_environment(
        write_config(config_dir, openai_model(model_server, timeout_seconds=timeout), strategy="function_calling")
    )
    verdicts = []
    for run in range(RUNS_PER_SCENARIO):
        answer = f"Paris (run {run})."
        for fault in faults:
            model_server.enqueue(fault.status, fault.body, fault.delay_seconds)
        model_server.enqueue(body=chat_completion(content=answer))
        expected = ExpectedRun(conversation=(question(QUESTION), reply(1, answer)), answer=answer)
        calls = CountCheck(lambda: len(model_server.requests), expected=len(faults) + 1, what="requests to the model")
        # When a question is asked
        verdicts.append(ask_and_judge(environment, QUESTION, expected, also=calls))
    # Then every run succeeded with the good answer only, the model called once per fault and once more
    settle(request.node, scenario, verdicts)


def test_a_model_that_rejects_the_request_ends_the_run_failed_with_its_error(
    model_server: FakeOpenAIServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given a model that rejects every request with 400
    model_server.default(status=400, body={"error": {"message": "model 'fake-model' does not exist"}})
    environment, _ = start_environment(
        write_config(config_dir, openai_model(model_server), strategy="function_calling")
    )
    expected = ExpectedRun(
        conversation=(question(QUESTION),),
        status="FAILED",
        stop_reason="model_error",
        error_type="LLMPermanentError",
        error_fragment="does not exist",
    )
    verdicts = []
    for _ in range(RUNS_PER_SCENARIO):
        calls = CountCheck(lambda: len(model_server.requests), expected=1, what="requests to the model")
        # When a question is asked
        verdicts.append(ask_and_judge(environment, QUESTION, expected, also=calls))
    # Then every run is FAILED with the provider's reason stored, after one request (no retry)
    settle(request.node, "model: HTTP 400 (permanent)", verdicts)


def test_a_model_failing_past_the_retry_budget_ends_the_run_failed_with_its_error(
    model_server: FakeOpenAIServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given a model that answers 429 to every request
    model_server.default(status=429, body=RATE_LIMITED)
    environment, _ = start_environment(
        write_config(config_dir, openai_model(model_server), strategy="function_calling")
    )
    expected = ExpectedRun(
        conversation=(question(QUESTION),),
        status="FAILED",
        stop_reason="model_error",
        error_type="LLMTransientError",
        error_fragment="HTTP 429",
    )
    verdicts = []
    for _ in range(RUNS_PER_SCENARIO):
        calls = CountCheck(lambda: len(model_server.requests), expected=ATTEMPTS_BUDGET, what="requests to the model")
        # When a question is asked
        verdicts.append(ask_and_judge(environment, QUESTION, expected, also=calls))
    # Then every run is FAILED with the last 429 stored, after the state machine's whole retry budget
    settle(request.node, "model: 429 past the retry budget", verdicts)
