"""`stepwise serve` under a burst: concurrent requests are all served and every run reaches its end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve
from tests.support.polling import run_seen, wait_for

CONCURRENT_RUNS = 50
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT"}
ANSWER = json.dumps({"action": "Final Answer", "action_input": "Answered."})
CONFIG = {
    "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": f"```json\n{ANSWER}\n```"}]}]}},
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(CONFIG, tmp_path_factory.mktemp("burst")) as served:
        yield served


def status_when_ended(client: httpx.Client, run_id: str) -> str:
    """The run's final status, polled as a client would; fails naming its last status if it does not end."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        return body

    ended = wait_for(
        read, lambda run: run["status"] in TERMINAL, what=f"run {run_id} ended", shown=run_seen, interval=0.25
    )
    return str(ended["status"])


def test_fifty_concurrent_posts_all_run_to_their_end(api: LocalApi) -> None:
    client = httpx.Client(base_url=api.url, headers={"x-api-key": "crowd"}, timeout=60)

    def post(n: int) -> Any:
        return client.post("/v1/runs", json={"input": f"Question {n}"})

    # When 50 questions are posted at once
    with ThreadPoolExecutor(max_workers=CONCURRENT_RUNS) as pool:
        responses = list(pool.map(post, range(CONCURRENT_RUNS)))
    # Then each got a run of its own, and every run succeeded: none was lost
    assert [response.status_code for response in responses] == [202] * CONCURRENT_RUNS
    run_ids = {response.json()["run_id"] for response in responses}
    assert len(run_ids) == CONCURRENT_RUNS
    assert [status_when_ended(client, run_id) for run_id in run_ids] == ["SUCCEEDED"] * CONCURRENT_RUNS
