"""`stepwise eval --against` and `POST /v1/runs/{run_id}/replay` on `stepwise serve` in a process of its own:
the suite's verdicts, answers and tool calls over HTTP equal those of the same suite run locally, and a
replay through the API calls no tool. Against a hostile server instead, the eval sends nothing outside
`/v1/runs` and ends with one line and exit 2."""

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
from tests.support.tool_server import (
    Behaviour,
    Endless,
    HugeBody,
    Json,
    Raw,
    Redirect,
    ScriptableToolServer,
    Status,
)

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


ACCEPTED = {"run_id": "run-1", "status": "QUEUED", "profile": "default", "intent": {}, "poll_url": "/v1/runs/run-1"}
ENDED = {
    "run_id": "run-1",
    "status": "SUCCEEDED",
    "profile": "default",
    "intent": {},
    "metadata": {},
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:01Z",
    "iterations": 1,
    "usage": {},
    "answer": "hello",
    "trace": [],
}


@pytest.fixture(scope="module")
def hostile_api() -> Iterator[ScriptableToolServer]:
    """A loopback server each test tells how to answer `POST /v1/runs` and `GET /v1/runs/{id}`."""
    with ScriptableToolServer(default=Status(404, "no such path")) as server:
        yield server


@pytest.mark.parametrize(
    ("started", "viewed", "reason"),
    [
        pytest.param(
            Json(ACCEPTED | {"run_id": "../steal?x="}, status=202),
            Json(ENDED),
            "POST /v1/runs answered 202: run_id: String should match pattern '^[A-Za-z0-9_-]{1,80}$' "
            "(got '../steal?x=')\n",
            id="a run id that leaves /v1/runs",
        ),
        pytest.param(
            Raw(b"<html>Accepted</html>", content_type="text/html", status=202),
            Json(ENDED),
            "POST /v1/runs answered 202: the body is not JSON",
            id="not JSON",
        ),
        pytest.param(
            Redirect("http://127.0.0.1:9/collect"),
            Json(ENDED),
            "POST /v1/runs answered 302, a redirect to http://127.0.0.1:9/collect; --against follows none",
            id="a redirect",
        ),
        pytest.param(
            Json([ACCEPTED], status=202),
            Json(ENDED),
            "POST /v1/runs answered 202: the body is a JSON array, not a JSON object",
            id="an array",
        ),
        pytest.param(
            Json({key: value for key, value in ACCEPTED.items() if key != "run_id"}, status=202),
            Json(ENDED),
            "POST /v1/runs answered 202: run_id: Field required",
            id="no run id",
        ),
        pytest.param(
            HugeBody(size=30_000_000, content_type="application/json"),
            Json(ENDED),
            "POST /v1/runs answered 200 with a body longer than 10485760 bytes",
            id="a 30 MB body",
        ),
        pytest.param(
            Endless(),
            Json(ENDED),
            "POST /v1/runs answered 200 with a body longer than 10485760 bytes",
            id="a body without end",
        ),
        pytest.param(
            Json(ACCEPTED, status=202),
            Json(ENDED | {"run_id": "run-2"}),
            "GET /v1/runs/run-1 answered about run run-2",
            id="another run's view",
        ),
        pytest.param(
            Json(ACCEPTED, status=202),
            Json(ENDED | {"status": "DONE\x1b[2J"}),
            "GET /v1/runs/run-1 answered 200: status: Input should be 'QUEUED'",
            id="a status no run has",
        ),
    ],
)
def test_a_server_answering_what_no_stepwise_api_answers_ends_the_eval_in_one_line(
    hostile_api: ScriptableToolServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    started: Behaviour,
    viewed: Behaviour,
    reason: str,
) -> None:
    # Given a one-case suite, and a server answering the start of a run, or its view, as no Stepwise API does
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: hostile\ncases:\n  - id: hello\n    input: Say hello.\n", encoding="utf-8")
    hostile_api.on("/v1/runs", started)
    hostile_api.on("/v1/runs/", viewed)
    earlier = len(hostile_api.requests)
    # When the suite is run against it
    code = main(["eval", str(suite), "--against", hostile_api.url, "--key", "alice"], out=io.StringIO())
    # Then the eval ends with exit status 2 and one line on stderr naming the request, the status and the reason
    error = capsys.readouterr().err
    assert code == 2
    assert error.startswith(f"stepwise: --against {hostile_api.url}: ")
    assert error.count("\n") == 1 and reason in error
    # And every request it sent, with the key, was one of the runs API's
    sent = hostile_api.requests[earlier:]
    assert sent and all(request.path == "/v1/runs" or request.path.startswith("/v1/runs/run-1") for request in sent)
    assert all(request.headers["x-api-key"] == "alice" for request in sent)
