"""`stepwise eval --against` and `POST /v1/runs/{run_id}/replay` on `stepwise serve` in a process of its own:
the suite's verdicts, answers and tool calls over HTTP equal those of the same suite run locally, and a
replay through the API calls no tool."""

from __future__ import annotations

import io
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.cli import main
from tests.conftest import PROJECT_ROOT
from tests.support.serve_process import ServeProcess
from tests.support.tool_server import Json, ScriptableToolServer

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "evals"
SUITE = FIXTURES / "suite.yaml"
CONFIG = FIXTURES / "agent.yaml"

OPEN = {"QUEUED", "RUNNING", "WAITING_APPROVAL"}


@pytest.fixture(scope="module")
def tool_api() -> Iterator[ScriptableToolServer]:
    """The tools' API on loopback for the server and the local runs alike, recording every request."""
    with ScriptableToolServer() as server:
        server.on("/weather/", Json({"city": "Paris", "condition": "light rain", "temperature_c": 14.0}))
        server.on("/convert", Json({"amount": 100, "from": "EUR", "to": "USD", "result": 108.7}))
        with pytest.MonkeyPatch.context() as environment:
            # read by the configuration's ${env:STEPWISE_EXAMPLE_API_URL}, here and in the server's process
            environment.setenv("STEPWISE_EXAMPLE_API_URL", server.url)
            yield server


@pytest.fixture(scope="module")
def served(tool_api: ScriptableToolServer, dynamodb_local: str) -> Iterator[ServeProcess]:
    """`stepwise serve` on the eval tests' configuration, in its own process, on the session's DynamoDB Local."""
    server = ServeProcess(
        [
            "--config",
            str(CONFIG),
            "--dynamodb-endpoint",
            dynamodb_local,
            "--table-name",
            "eval-against",
            "--workers",
            "0",
        ]
    )
    yield server
    server.end(signal.SIGTERM)


def comparable(report: dict[str, Any]) -> list[dict[str, Any]]:
    """What must not depend on where the suite ran: verdicts, checks, answers, calls, tokens (not ids or times)."""
    kept_outcome = (
        "status",
        "stop_reason",
        "answer",
        "output",
        "iterations",
        "input_tokens",
        "output_tokens",
        "tool_calls",
    )
    return [
        {
            "id": case["id"],
            "verdicts": (case["passes"], case["runs"], case["pass_at_k"], case["pass_hat_k"], case["passed"]),
            "checks": case["checks"],
            "outcomes": [
                {name: attempt["outcome"][name] for name in kept_outcome} | {"checks": attempt["checks"]}
                for attempt in case["attempts"]
            ],
        }
        for case in report["cases"]
    ]


def test_a_suite_run_against_the_served_api_gives_the_results_it_gives_locally(
    served: ServeProcess, tmp_path: Path, dynamodb_local: str, unique_table_name: str
) -> None:
    # Given the ten-case suite, run once in the local engine
    local_report, remote_report = tmp_path / "local.json", tmp_path / "remote.json"
    store = ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]
    local_code = main(
        ["eval", str(SUITE), "--config", str(CONFIG), "--json", str(local_report), *store], out=io.StringIO()
    )
    # When it runs through the served API with a key
    out = io.StringIO()
    remote_code = main(
        [
            "eval",
            str(SUITE),
            "--config",
            str(CONFIG),
            "--against",
            served.url,
            "--key",
            "alice",
            "--json",
            str(remote_report),
        ],
        out=out,
    )
    # Then its exit code, verdicts, checks, answers, tool calls and tokens are the same
    assert remote_code == local_code == 1
    local, remote = (json.loads(path.read_text(encoding="utf-8")) for path in (local_report, remote_report))
    assert comparable(remote) == comparable(local)
    # And its runs are the caller's, tagged with the suite and the case
    run_id = remote["cases"][0]["attempts"][0]["outcome"]["run_id"]
    view = httpx.get(f"{served.url}/v1/runs/{run_id}", headers={"x-api-key": "alice"}).json()
    assert view["metadata"] == {"eval.suite": "travel", "eval.case": "paris-weather", "eval.attempt": "1/1"}
    listed = httpx.get(f"{served.url}/v1/runs?limit=100", headers={"x-api-key": "alice"}).json()["runs"]
    tags = {run["metadata"]["eval.case"] for run in listed if run["metadata"].get("eval.suite") == "travel"}
    assert tags == {case["id"] for case in remote["cases"]}


def ended(url: str, run_id: str, key: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        view: dict[str, Any] = httpx.get(f"{url}/v1/runs/{run_id}?trace=true", headers={"x-api-key": key}).json()
        if view["status"] not in OPEN:
            return view
        assert time.monotonic() < deadline, f"run {run_id} did not end"
        time.sleep(0.1)


def test_a_replay_through_the_api_is_the_owners_own_and_calls_no_tool(
    served: ServeProcess, tool_api: ScriptableToolServer
) -> None:
    # Given a run of alice's that called get_weather once
    key = {"x-api-key": "alice"}
    started = httpx.post(f"{served.url}/v1/runs", json={"input": "What is the weather in Paris?"}, headers=key).json()
    original = ended(served.url, started["run_id"], "alice")
    requests_before = len(tool_api.requests)
    replay_url = f"{served.url}/v1/runs/{original['run_id']}/replay"
    # When someone else asks to replay it, then the run is not found
    assert httpx.post(replay_url, json={}, headers={"x-api-key": "mallory"}).status_code == 404
    # And a fork past its iterations is refused, naming the field
    refused = httpx.post(replay_url, json={"from_iteration": 2}, headers=key)
    assert refused.status_code == 422 and refused.json()["error"]["param"] == "from_iteration"
    # When alice replays it under the changed profile, which converts currency instead
    accepted = httpx.post(replay_url, json={"profile": "v2", "metadata": {"why": "try v2"}}, headers=key)
    assert accepted.status_code == 202
    body = accepted.json()
    replay = ended(served.url, body["run_id"], "alice")
    # Then the replay is a new run of hers, linked to its original
    assert (body["original_run_id"], body["profile"], body["from_iteration"]) == (original["run_id"], "v2", 0)
    assert replay["replay"] == {"original_run_id": original["run_id"], "from_iteration": 0, "live_tools": False}
    assert replay["status"] == "SUCCEEDED" and replay["answer"] == "Version 2: 100 EUR is about 108.70 USD."
    # And its call the original never made was answered "not recorded", not sent to the tool API
    calls = [step for step in replay["trace"] if step["kind"] == "tool"]
    assert [(call["tool"], call["ok"]) for call in calls] == [("convert_currency", False)]
    assert calls[0]["note"].startswith("not recorded:")
    assert len(tool_api.requests) == requests_before
