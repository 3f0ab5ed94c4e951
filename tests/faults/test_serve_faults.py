"""Faults under `stepwise serve`: runs posted and polled over HTTP while the model and DynamoDB misbehave.

What the caller reads over HTTP must agree with the store: the same status, answer and error.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from stepwise.models.run import TERMINAL_STATUSES
from tests.faults.dynamodb_proxy import EveryNth, Fault, FaultyDynamoDBProxy
from tests.faults.harness import RUNS_PER_SCENARIO, armed, openai_model, settle, write_config
from tests.faults.outcomes import ExpectedRun, Outcome, RunVerdict, judge_run, question, reply
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.polling import CROSS_PROCESS_SECONDS

QUESTION = "What is the capital of France?"
# a run under injected faults retries: on a loaded machine it may take minutes (a run not ended by then is lost)
POLL_LIMIT_SECONDS = CROSS_PROCESS_SECONDS
POLL_INTERVAL_SECONDS = 0.05
THROTTLED = EveryNth(period=5, fault=Fault.THROTTLE)  # isolated: the SDK retries each away


@pytest.fixture
def serve(
    model_server: FakeOpenAIServer, proxy: FaultyDynamoDBProxy, config_dir: Path, unique_table_name: str
) -> Iterator[tuple[LocalApi, httpx.Client]]:
    """`stepwise serve` on the fake model, its store behind the proxy, and an HTTP client with an API key."""
    config = write_config(config_dir, openai_model(model_server), strategy="function_calling")
    with (
        LocalApi(
            config_dir=config,
            retry_interval_scale=0.0,
            dynamodb_endpoint_url=proxy.url,
            table_name=unique_table_name,
        ) as api,
        httpx.Client(base_url=api.url, headers={"x-api-key": "fault-suite"}, timeout=30) as client,
    ):
        yield api, client


def finished_run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run as the caller reads it once it ended (or when polling gives up)."""
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while True:
        view: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if view.get("status") in TERMINAL_STATUSES or time.monotonic() > deadline:
            return view
        time.sleep(POLL_INTERVAL_SECONDS)


def ask_over_http(
    api: LocalApi,
    client: httpx.Client,
    expected: ExpectedRun,
    during: Callable[[], contextlib.AbstractContextManager[None]],
) -> RunVerdict:
    """Post the question and poll it to its end (inside `during`); judge the stored run and what HTTP said."""
    with during():
        accepted = client.post("/v1/runs", json={"input": QUESTION})
        if accepted.status_code != 202:
            return RunVerdict("-", Outcome.UNEXPECTED, (f"POST answered {accepted.status_code}: {accepted.text}",))
        run_id = accepted.json()["run_id"]
        view = finished_run(client, run_id)
    verdict = judge_run(api.environment.runtime.store, run_id, expected)
    meta = api.environment.runtime.store.get_run(run_id)
    said = (view.get("status"), view.get("answer"), (view.get("error") or {}).get("type"))
    stored = (meta.status, meta.answer, meta.error.type if meta.error else None) if meta else None
    if verdict.outcome in (Outcome.SUCCEEDED, Outcome.FAILED_AS_EXPECTED) and said != stored:
        return RunVerdict(run_id, Outcome.UNEXPECTED, (f"HTTP says {said}, the store {stored}",))
    return verdict


def test_runs_served_over_http_survive_model_faults_and_throttling(
    serve: tuple[LocalApi, httpx.Client],
    model_server: FakeOpenAIServer,
    proxy: FaultyDynamoDBProxy,
    request: pytest.FixtureRequest,
) -> None:
    api, client = serve
    verdicts = []
    for run in range(RUNS_PER_SCENARIO):
        # Given a model that answers 429, then 500, then the answer, and a store throttling 1 request in 5
        answer = f"Paris (run {run})."
        model_server.enqueue(429, {"error": {"message": "Rate limit reached"}})
        model_server.enqueue(500, {"error": {"message": "upstream failed"}})
        model_server.enqueue(body=chat_completion(content=answer))
        expected = ExpectedRun(conversation=(question(QUESTION), reply(1, answer)), answer=answer)
        # When the question is posted and polled over HTTP
        verdicts.append(ask_over_http(api, client, expected, lambda: armed(proxy, THROTTLED)))
    # Then every run succeeded whole, and the caller read the same outcome the store holds
    assert proxy.injected(Fault.THROTTLE) >= RUNS_PER_SCENARIO
    settle(request.node, "stepwise serve: model 429 + 500, DynamoDB 1 in 5 throttled", verdicts)


def test_a_run_served_over_http_that_the_model_rejects_reads_failed_with_its_error(
    serve: tuple[LocalApi, httpx.Client],
    model_server: FakeOpenAIServer,
    proxy: FaultyDynamoDBProxy,
    request: pytest.FixtureRequest,
) -> None:
    api, client = serve
    # Given a model that rejects every request with 400
    model_server.default(status=400, body={"error": {"message": "model 'fake-model' does not exist"}})
    expected = ExpectedRun(
        conversation=(question(QUESTION),),
        status="FAILED",
        stop_reason="model_error",
        error_type="LLMPermanentError",
        error_fragment="does not exist",
    )
    # When questions are posted and polled over HTTP
    verdicts = [ask_over_http(api, client, expected, lambda: armed(proxy, THROTTLED)) for _ in range(RUNS_PER_SCENARIO)]
    # Then every run reads FAILED with the provider's reason, as the store holds it
    settle(request.node, "stepwise serve: model HTTP 400 (permanent)", verdicts)
