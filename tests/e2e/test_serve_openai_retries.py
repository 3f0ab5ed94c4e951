"""The `openai` SDK's own retries against `stepwise serve`: a chat completion answered 502 or 504 has started
a run, so the SDK (which resends 5xx answers twice by default) must not resend it and start another.

The SDK is configured as users configure it, with nothing but `api_key` and `base_url`, so its default
retries are on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from stepwise.local.server import LocalApi
from tests.e2e.conftest import react_answer, serve

# No scenario for other questions: the scripted model fails them, so their run ends FAILED.
CONFIG: dict[str, Any] = {
    "models": {
        "m": {
            "provider": "scripted",
            "scenarios": [{"match": "slow", "turns": [{**react_answer("Done, slowly."), "latency_ms": 2500}]}],
        }
    },
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
    "api": {"sync_timeout_seconds": 1.0},
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(CONFIG, Path(tmp_path_factory.mktemp("retries"))) as served:
        yield served


def sdk(api: LocalApi, key: str) -> OpenAI:
    return OpenAI(api_key=key, base_url=f"{api.url}/v1")


def runs_of(api: LocalApi, key: str) -> list[str]:
    """The ids of the runs the caller with `key` started."""
    response = httpx.get(f"{api.url}/v1/runs", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return [run["run_id"] for run in response.json()["runs"]]


def test_a_chat_completion_past_the_wait_is_one_504_and_one_run(api: LocalApi) -> None:
    # Given the SDK with its default retries
    client = sdk(api, "sk-slow")
    # When it asks for a completion slower than the synchronous wait
    with pytest.raises(openai.APIStatusError) as timed_out:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "slow one"}])
    # Then it gets the 504 naming the run, and that run is the only one started
    assert timed_out.value.status_code == 504
    assert runs_of(api, "sk-slow") == [timed_out.value.response.json()["error"]["details"]["run_id"]]


def test_a_chat_completion_whose_run_failed_is_one_502_and_one_run(api: LocalApi) -> None:
    # Given the SDK with its default retries
    client = sdk(api, "sk-failing")
    # When it asks a question whose run ends FAILED
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "unscripted"}])
    # Then it gets the 502 naming the run, and that run is the only one started
    assert failed.value.status_code == 502
    assert runs_of(api, "sk-failing") == [failed.value.response.json()["error"]["details"]["run_id"]]
