"""`stepwise serve` killed or stopped with runs in flight, then started again on the same store.

The server runs as its own process (as a user starts it), on the session's DynamoDB Local, with a table
of the test's own; the scripted model takes a while per turn so that runs are caught mid-loop.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import yaml

from bench.harness import scripted_config
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.embedded_dynamodb import create_table_from_template
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.server import LocalApi
from stepwise.local.template import SamTemplate
from stepwise.models.run import RunLimits, RunMeta
from stepwise.store.conversation import ConversationStore
from tests.support.polling import CROSS_PROCESS_SECONDS, run_seen, wait_for
from tests.support.serve_process import ServeProcess
from tests.support.tool_server import Json, ScriptableToolServer
from tests.support.windowed_model import PageReader, WindowedModelServer, page_text

ITERATIONS = 3
MODEL_LATENCY_MS = 400
RUNS = 4
KEYED_RUNS = 2
START_LIMIT_SECONDS = 120.0
FINISH_LIMIT_SECONDS = 120.0
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}
HEADERS = {"x-api-key": "recovery"}


@pytest.fixture
def model_latency_ms() -> int:
    """How long each of the scripted model's replies takes (a test overrides it to keep a run in flight)."""
    return MODEL_LATENCY_MS


@pytest.fixture
def serve_arguments(
    dynamodb_local: str, unique_table_name: str, tmp_path: Path, model_latency_ms: int
) -> Iterator[list[str]]:
    """A config whose model calls a tool twice before answering, on the session's DynamoDB Local; chat
    completions wait for their run as long as the API allows."""
    with ExampleToolApi() as api:
        config = scripted_config(ITERATIONS, api.url, model_latency_ms=model_latency_ms)
        config["api"] = {"sync_timeout_seconds": 28}
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        yield [
            "--config",
            str(tmp_path / "stepwise.yaml"),
            "--dynamodb-endpoint",
            dynamodb_local,
            "--table-name",
            unique_table_name,
        ]


def _post(url: str, index: int) -> str:
    headers = HEADERS | ({"Idempotency-Key": f"key-{index}"} if index < KEYED_RUNS else {})
    response = httpx.post(f"{url}/v1/runs", json={"input": f"weather in Paris? #{index}"}, headers=headers)
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def _wait_until(url: str, run_ids: list[str], done: Any) -> dict[str, dict[str, Any]]:
    """The runs once `done` holds for each; fails naming each run's last status if it does not."""
    # one client for every poll: a new one reads the CA certificates again (tens of ms of CPU each)
    with httpx.Client(base_url=url, headers=HEADERS, timeout=CROSS_PROCESS_SECONDS) as client:
        return wait_for(
            lambda: {run_id: dict(client.get(f"/v1/runs/{run_id}").json()) for run_id in run_ids},
            lambda runs: all(done(run) for run in runs.values()),
            what=f"{len(run_ids)} runs",
            within=FINISH_LIMIT_SECONDS,
            shown=lambda runs: str({run_id: run_seen(run) for run_id, run in runs.items()}),
            interval=0.2,
        )


def _store(dynamodb_local: str, table_name: str) -> ConversationStore:
    client = boto3.client("dynamodb", endpoint_url=dynamodb_local, region_name="us-east-1")
    return ConversationStore(client, table_name)


@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_runs_in_flight_when_serve_stops_all_succeed_after_a_restart_with_no_duplicate(
    signal_number: int, serve_arguments: list[str], dynamodb_local: str, unique_table_name: str
) -> None:
    # Given runs posted to `stepwise serve` (two with an Idempotency-Key), caught mid-loop
    first = ServeProcess(serve_arguments)
    run_ids = [_post(first.url, index) for index in range(RUNS)]
    _wait_until(first.url, run_ids[:1], lambda run: run["status"] == "RUNNING")
    # When the server is ended by the signal, and started again on the same store
    code = first.end(signal_number)
    second = ServeProcess(serve_arguments)
    try:
        runs = _wait_until(second.url, run_ids, lambda run: run["status"] in TERMINAL)
        replayed = [_post(second.url, index) for index in range(KEYED_RUNS)]
    finally:
        second.end(signal.SIGTERM)
    # Then SIGTERM exited 0, every run succeeded, the same Idempotency-Key returned the original run
    if signal_number == signal.SIGTERM:
        assert code == 0
    assert {run_id: run["status"] for run_id, run in runs.items()} == dict.fromkeys(run_ids, "SUCCEEDED")
    assert replayed == run_ids[:KEYED_RUNS]
    # And each conversation is whole, every message once: question, then 3 replies and 2 observations
    store = _store(dynamodb_local, unique_table_name)
    for run_id in run_ids:
        roles = [message.role for message in store.list_messages(run_id)]
        assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"], run_id
        assert store.require_run(run_id).usage.llm_calls == ITERATIONS


def test_a_run_left_open_past_its_deadline_ends_timed_out_with_the_reason(
    dynamodb_local: str, unique_table_name: str, tmp_path: Path
) -> None:
    # Given a run left RUNNING in the store by a process that stopped, whose deadline has passed
    client = boto3.client("dynamodb", endpoint_url=dynamodb_local, region_name="us-east-1")
    create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), unique_table_name)
    store = ConversationStore(client, unique_table_name)
    meta = RunMeta(
        run_id="left-open-past-deadline",
        status="RUNNING",
        owner="recovery",
        profile="default",
        limits=RunLimits(max_execution_seconds=1),
        iteration=2,
        deadline=time.time() - 60,
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:00.000Z",
        expires_at=int(time.time()) + 3600,
    )
    store.create_run(meta, [])
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(scripted_config(1, "http://127.0.0.1:9")), encoding="utf-8")
    # When the local API starts on that store
    with LocalApi(config_dir=tmp_path, dynamodb_endpoint_url=dynamodb_local, table_name=unique_table_name) as api:
        recovery = api.recovery
    # Then the run ended TIMED_OUT, with the reason stored, and nothing was resumed
    ended = store.require_run(meta.run_id)
    assert (recovery.resumed, recovery.timed_out) == ([], [meta.run_id])
    assert (ended.status, ended.stop_reason) == ("TIMED_OUT", "deadline")
    assert ended.error is not None and "deadline" in ended.error.message
    assert json.loads(ended.model_dump_json())["error"]["type"] == "LocalEngineStopped"


SLOW_MODEL_MS = 3000
CHAT = {"model": "default", "messages": [{"role": "user", "content": "weather in Paris?"}]}


@pytest.mark.parametrize("model_latency_ms", [SLOW_MODEL_MS])
def test_a_chat_waiting_when_serve_stops_is_answered_503_naming_its_run_not_to_be_retried(
    serve_arguments: list[str],
) -> None:
    # Given a chat completion waiting on `stepwise serve` for a run whose model is slow
    serve = ServeProcess(serve_arguments)
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = pool.submit(httpx.post, f"{serve.url}/v1/chat/completions", json=CHAT, headers=HEADERS, timeout=60)
        runs = _wait_for_runs(serve.url, 1)
        # When the server is sent SIGTERM while the chat waits
        code = serve.end(signal.SIGTERM)
        answer = waiting.result()
    # Then the chat is answered 503 in the API's error shape, telling the SDK not to retry (a retry would
    # start another run) and naming the run to poll instead, as a 504 does; and the server exited 0
    assert answer.status_code == 503
    assert answer.headers["x-should-retry"] == "false"
    error = answer.json()["error"]
    assert error["type"] == "unavailable"
    assert len(runs) == 1
    assert error["details"]["run_id"] == runs[0]["run_id"] and runs[0]["run_id"] in error["message"]
    assert code == 0


@pytest.mark.parametrize("model_latency_ms", [SLOW_MODEL_MS])
def test_a_streamed_chat_open_when_serve_stops_ends_with_an_error_event_and_done(serve_arguments: list[str]) -> None:
    # Given a streamed chat completion open on `stepwise serve`, its run still in the slow model
    serve = ServeProcess(serve_arguments)
    lines: list[str] = []
    with httpx.stream(
        "POST", f"{serve.url}/v1/chat/completions", json=CHAT | {"stream": True}, headers=HEADERS, timeout=60
    ) as response:
        for line in response.iter_lines():
            lines += [line] if line else []
            if len(lines) == 1:
                # When the server is sent SIGTERM once the stream has begun
                serve.process.send_signal(signal.SIGTERM)
    code = serve.process.wait(timeout=60)
    # Then the stream ended with an error event naming the run, then [DONE], and the server exited 0
    error = json.loads(lines[-2].removeprefix("data: "))["error"]
    assert error["type"] == "unavailable"
    assert lines[0].startswith("data: ") and error["details"]["run_id"] in lines[0]
    assert lines[-1] == "data: [DONE]"
    assert code == 0


def _wait_for_runs(url: str, count: int) -> list[dict[str, Any]]:
    """The caller's runs once there are `count` of them."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=CROSS_PROCESS_SECONDS) as client:
        runs: list[dict[str, Any]] = wait_for(
            lambda: client.get("/v1/runs").json()["runs"],
            lambda runs: len(runs) >= count,
            what=f"{count} runs listed",
            within=START_LIMIT_SECONDS,
            shown=lambda runs: f"{len(runs)} runs",
            interval=0.1,
        )
        return runs


def test_serve_killed_in_the_middle_of_a_compaction_resumes_the_run_to_success(
    dynamodb_local: str, unique_table_name: str, tmp_path: Path
) -> None:
    summarizing, killed = threading.Event(), threading.Event()

    def summary(body: dict[str, Any]) -> str:
        # the first summary is asked of a server about to be killed: it answers only once that happened
        if not summarizing.is_set():
            summarizing.set()
            killed.wait(timeout=START_LIMIT_SECONDS)
        return "Facts:\n- every page read holds parcels\nOpen:\n- read the remaining pages"

    reader = PageReader(8, summary=summary)
    with (
        ScriptableToolServer() as pages,
        WindowedModelServer(window=10_000, responder=reader) as model,
    ):
        for page in range(1, 9):
            pages.on(f"/pages/{page}", Json({"page": page, "text": page_text(page, 6000)}))
        config = _reader_config(model, pages.url)
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        arguments = ["--config", str(tmp_path / "stepwise.yaml"), "--dynamodb-endpoint", dynamodb_local]
        arguments += ["--table-name", unique_table_name]
        # Given a run on `stepwise serve` whose conversation is being summarized
        first = ServeProcess(arguments)
        run_id = _post(first.url, 0)
        assert summarizing.wait(timeout=FINISH_LIMIT_SECONDS), "no compaction began"
        # When the server is killed in the middle of the compaction, and started again on the same store
        first.end(signal.SIGKILL)
        killed.set()
        second = ServeProcess(arguments)
        try:
            run = _wait_until(second.url, [run_id], lambda found: found["status"] in TERMINAL)[run_id]
        finally:
            second.end(signal.SIGTERM)
    # Then the run resumed and succeeded, with each page read once and each message stored once
    assert (run["status"], run["answer"]) == ("SUCCEEDED", "I read 8 pages.")
    assert len(pages.requests) == 8
    store = _store(dynamodb_local, unique_table_name)
    roles = [message.role for message in store.list_messages(run_id)]
    assert roles == ["user", *["assistant", "tool"] * 8, "assistant"]
    # And its compaction was written once, by the resumed server
    compactions = [step for step in store.list_steps(run_id) if step.kind == "compaction"]
    assert len(compactions) == 1 and compactions[0].compaction is not None
    assert compactions[0].compaction.source == "model"


def _reader_config(model: WindowedModelServer, pages_url: str) -> dict[str, Any]:
    """A native-tools model with a 10,000-token window reading 6 KB pages from `pages_url`."""
    tool = {
        "toolName": "fetch_page",
        "description": "One page of the depot report.",
        "method": "GET",
        "path": "/pages/{page}",
        "parameter": {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]},
    }
    return {
        "models": {
            "m": {
                "provider": "openai",
                "base_url": model.base_url,
                "model": "windowed-model",
                "api_key": "sk-recovery",
                "context_window": model.window,
                "capabilities": {"native_tools": True},
            }
        },
        "tools": {"apis": [{"url": pages_url, "internal": True, "tools": [tool]}], "builtin": []},
        "profiles": {
            "default": {
                "model": "m",
                "strategy": "function_calling",
                "limits": {"max_iterations": 12, "max_observation_chars": 8000, "max_parallel_calls": 1},
            }
        },
    }
