"""`stepwise serve --workflow-type EXPRESS`: chat completions wait through StartSyncExecution."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import serve
from tests.support.polling import run_seen, wait_for

# long enough for a loaded machine to run a one-iteration execution (3 s was not, once, with two CPU-bound
# processes beside the suite), short enough to wait past
SYNC_TIMEOUT_SECONDS = 10


def answer(text: str, **turn: Any) -> dict[str, Any]:
    block = json.dumps({"action": "Final Answer", "action_input": text})
    return {"content": f"```json\n{block}\n```", **turn}


CONFIG = {
    "models": {
        "m": {
            "provider": "scripted",
            "scenarios": [
                {"match": "slow", "turns": [answer("Done, slowly.", latency_ms=12_000)]},
                {"turns": [answer("Hello from an Express run.")]},
            ],
        }
    },
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
    "api": {"sync_timeout_seconds": SYNC_TIMEOUT_SECONDS},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with serve(CONFIG, tmp_path_factory.mktemp("express"), workflow_type="EXPRESS") as api:
        yield httpx.Client(base_url=api.url, headers={"x-api-key": "express"}, timeout=30)


def chat(client: httpx.Client, question: str) -> httpx.Response:
    return client.post(
        "/v1/chat/completions", json={"model": "any", "messages": [{"role": "user", "content": question}]}
    )


def test_a_chat_completion_is_answered_by_a_synchronous_execution(client: httpx.Client) -> None:
    # When a chat completion is asked for
    response = chat(client, "hi")
    # Then the synchronous execution's answer comes back, echoing the model asked for
    completion = response.json()
    assert (response.status_code, completion["model"]) == (200, "any")
    assert completion["choices"][0]["message"]["content"] == "Hello from an Express run."


def test_a_synchronous_execution_slower_than_the_wait_is_504_and_goes_on_to_its_answer(client: httpx.Client) -> None:
    # When a chat completion takes longer than the configured wait
    response = chat(client, "a slow one")
    # Then the answer is 504 naming the run, and the run still ends with its answer
    assert (response.status_code, response.json()["error"]["type"]) == (504, "timeout")
    run_id = response.json()["error"]["details"]["run_id"]
    run = wait_for(
        lambda: client.get(f"/v1/runs/{run_id}").json(),
        lambda run: run["status"] in ("SUCCEEDED", "FAILED"),
        what=f"run {run_id} ended",
        shown=run_seen,
    )
    assert (run["status"], run["answer"]) == ("SUCCEEDED", "Done, slowly.")
