"""A canary secret echoed back by a tool in every common encoding reaches no item, response, log or model.

The canary lives in SSM and is the query key of an API. The API answers with the canary in each form of
`tests.unit.test_secret_encodings.ENCODINGS` (percent-encoding in either case, of every byte, twice; HTML
entities named, decimal and hex; JSON and Python escapes; upper case; base64, base64url, base32 and hex
of the canary and of its halves).
The run goes through `stepwise serve` and the real state machine with an OpenAI-compatible model on
loopback; every logger is at DEBUG. Afterwards the stored items, the API's answers (trace included),
the log records, stdout/stderr and every request the model received are searched for each encoding, both
as they are written and, for JSON documents, in each of their strings (where JSON's own escaping is undone).

A literal secret (a tool's `apiKey` written in the configuration) that a fresh server's model restates in
its very first reply, in its text, reasoning and tool call arguments, then spaced out, reversed and in
full-width letters, is in none of the run list, the run, the stored items or an eval report of a run.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import yaml
from moto import mock_aws

from stepwise.cli import main
from tests.e2e.conftest import get_tool, http_api, serve
from tests.e2e.test_secret_canary import scan_table
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.polling import run_seen, wait_for
from tests.support.tool_server import Json, Raw, ScriptableToolServer
from tests.unit.test_secret_encodings import CANARY, ENCODINGS, encodings_of, full_width

PARAMETER = "/stepwise/canary/encodings"
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}


@pytest.fixture
def ssm_canary() -> Iterator[None]:
    with mock_aws(config={"core": {"service_whitelist": ["ssm"]}}):
        boto3.client("ssm", region_name="us-east-1").put_parameter(Name=PARAMETER, Value=CANARY, Type="SecureString")
        yield


def strings_in(value: Any) -> str:
    """Every string of a JSON-like value, keys included, one a line: what a reader of the document sees."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(strings_in(key) + "\n" + strings_in(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(strings_in(item) for item in value)
    return ""


def finished_run(client: httpx.Client, run_id: str) -> httpx.Response:
    """The run's answer (with its trace) once it ended; fails naming its last status if it does not end."""

    def read() -> httpx.Response:
        return client.get(f"/v1/runs/{run_id}", params={"trace": "true"})

    return wait_for(
        read,
        lambda response: response.json()["status"] in TERMINAL,
        what=f"run {run_id} ended",
        shown=lambda response: run_seen(response.json()),
    )


def echoing_setup(tool_api: ScriptableToolServer, model: FakeOpenAIServer) -> dict[str, Any]:
    """A config whose API, keyed by the canary, echoes it in every encoding; its model calls it once, then answers."""
    tool_api.on("/lookup", Raw(json.dumps(ENCODINGS).encode()))
    api_entry = http_api(tool_api.url, get_tool("lookup", "/lookup", q="string"))
    api_entry["apiKey"] = {"in": "query", "name": "key", "value": f"ssm:{PARAMETER}"}
    model.enqueue(body=chat_completion(tool_calls=[{"name": "lookup", "arguments": {"q": "x"}}]))
    model.enqueue(body=chat_completion(content="Looked it up."))
    return {
        "models": {"m": {"provider": "openai", "base_url": model.base_url, "model": "fake-model"}},
        "tools": {"apis": [api_entry]},
        "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
    }


def leaked_forms(places: dict[str, str], forms: dict[str, str] = ENCODINGS) -> list[tuple[str, str]]:
    """(place, encoding) for each encoded form of the canary (or of `forms`' secret) found in a place."""
    return [(place, name) for place, text in places.items() for name, form in forms.items() if form in text]


def test_every_encoding_of_an_echoed_canary_is_absent_from_everything_the_run_produced(
    ssm_canary: None, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    with ScriptableToolServer() as tool_api, FakeOpenAIServer() as model:
        # Given an API keyed by the canary that echoes the canary back in every encoding, and a model that
        # calls it once, then answers
        config = echoing_setup(tool_api, model)
        with serve(config, tmp_path) as served:
            client = httpx.Client(base_url=served.url, headers={"x-api-key": "alice"}, timeout=30)
            # When a question is asked and its run read back with its trace
            accepted = client.post("/v1/runs", json={"input": "look it up"})
            answer = finished_run(client, accepted.json()["run_id"])
            run_id = accepted.json()["run_id"]
            events = client.get(f"/v1/runs/{run_id}/events")
            streamed = client.get(f"/v1/runs/{run_id}/events", headers={"Accept": "text/event-stream"})
            items = scan_table(served.environment.table_name)
        model_requests = [request.body for request in model.requests]
        sent_keys = [request.query.get("key") for request in tool_api.requests]

    # Then the API did receive the secret and the run succeeded
    assert sent_keys == [[CANARY]]
    assert answer.json()["status"] == "SUCCEEDED"
    assert events.status_code == streamed.status_code == 200
    assert len(model_requests) == 2
    captured = capfd.readouterr()
    places = {
        "run and trace": accepted.text + answer.text + strings_in(answer.json()),
        "events": events.text + strings_in(events.json()) + streamed.text,
        "stored items": json.dumps(items) + strings_in(items),
        "model requests": json.dumps(model_requests, ensure_ascii=False)
        + json.dumps(model_requests)
        + strings_in(model_requests),
        "log records": caplog.text,
        "stdout and stderr": captured.out + captured.err,
    }
    # And the echoed forms were redacted where the model read them
    assert "***" in json.dumps(model_requests[1])
    # But no form of the canary is anywhere
    assert leaked_forms(places) == []


def test_no_encoding_of_an_echoed_canary_is_in_a_streamed_chat_completion(ssm_canary: None, tmp_path: Path) -> None:
    with ScriptableToolServer() as tool_api, FakeOpenAIServer() as model:
        # Given the same echoing API and model, asked through a streamed chat completion (steps included)
        config = echoing_setup(tool_api, model)
        body = {"model": "any", "messages": [{"role": "user", "content": "look it up"}], "stream": True}
        with serve(config, tmp_path) as served:
            client = httpx.Client(base_url=served.url, headers={"x-api-key": "alice"}, timeout=60)
            # When every chunk of the stream is read to its end
            with client.stream("POST", "/v1/chat/completions", json=body) as response:
                streamed = "".join(response.iter_text())
        sent_keys = [request.query.get("key") for request in tool_api.requests]

    # Then the tool was called with the secret and the stream ran to its answer
    assert sent_keys == [[CANARY]]
    assert (response.status_code, "Looked it up." in streamed, "[DONE]" in streamed) == (200, True, True)
    # And the tool's step was streamed with the echoed forms redacted, and no chunk, nor any JSON string in
    # one, holds a form of the canary
    chunks = [json.loads(line[len("data: ") :]) for line in streamed.splitlines() if line.startswith("data: {")]
    tool_steps = [chunk["stepwise_step"] for chunk in chunks if chunk.get("stepwise_step", {}).get("kind") == "tool"]
    assert ["***" in step["observation"] for step in tool_steps] == [True]
    assert leaked_forms({"stream": streamed + strings_in(chunks)}) == []


# A key as providers issue them, written in the configuration as it is (no SSM): no process resolves it
# before a tool call, and the model restates it before any.
LITERAL = "sk-live-4fQz7Lm2Xc8Vb1Nw6Rt3Yp5K"


def restating(content: str, *, reasoning: str | None = None, **options: Any) -> dict[str, Any]:
    """A chat completion whose message says `content` (and, as DeepSeek writes it, `reasoning`)."""
    body = chat_completion(content=content, **options)
    if reasoning is not None:
        body["choices"][0]["message"]["reasoning_content"] = reasoning
    return body


def test_a_literal_secret_a_fresh_servers_model_restates_is_in_no_answer_stored_item_or_eval_report(
    tmp_path: Path,
) -> None:
    with ScriptableToolServer() as tool_api, FakeOpenAIServer() as model:
        # Given a tool whose API key is a literal in the configuration, and a model whose first reply restates
        # that key in its text, its reasoning and its call's arguments, and whose answer spells it out
        tool_api.on("/lookup", Json({"found": "nothing"}))
        api_entry = http_api(tool_api.url, get_tool("lookup", "/lookup", q="string"))
        api_entry["apiKey"] = {"in": "header", "name": "X-Key", "value": LITERAL}
        call = {"name": "lookup", "arguments": {"q": f"key {LITERAL}"}}
        model.enqueue(body=restating(f"Using {LITERAL}.", reasoning=f"The key is {LITERAL}.", tool_calls=[call]))
        model.enqueue(body=restating(f"It was {' '.join(LITERAL)}, {LITERAL[::-1]}, {full_width(LITERAL)}."))
        # (and the eval case's run answers with the key itself)
        model.enqueue(body=restating(f"The key is {LITERAL}."))
        config = {
            "models": {"m": {"provider": "openai", "base_url": model.base_url, "model": "fake-model"}},
            "tools": {"apis": [api_entry]},
            "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
        }
        suite = tmp_path / "suite.yaml"
        case = {"id": "key", "input": "What is the key?", "expect": {"answer_contains": "never said"}}
        suite.write_text(yaml.safe_dump({"name": "canary", "cases": [case]}), encoding="utf-8")
        with serve(config, tmp_path) as served:
            client = httpx.Client(base_url=served.url, headers={"x-api-key": "alice"}, timeout=30)
            # When a fresh server runs a question, is read back, and an eval suite runs against it
            run_id = client.post("/v1/runs", json={"input": "look it up"}).json()["run_id"]
            run = finished_run(client, run_id)
            listed = client.get("/v1/runs")
            items = scan_table(served.environment.table_name)
            report, junit = tmp_path / "report.json", tmp_path / "report.xml"
            arguments = ["eval", str(suite), "--against", served.url, "--key", "alice", "--parallel", "1"]
            code = main([*arguments, "--json", str(report), "--junit", str(junit)], out=io.StringIO())
        model_requests = [request.body for request in model.requests]
        sent_keys = [request.headers.get("x-key") for request in tool_api.requests]

    # Then the tool got the key, the run succeeded, and the eval ran its case (which fails, as written)
    assert (sent_keys, run.json()["status"], code) == ([LITERAL], "SUCCEEDED", 1)
    assert len(model_requests) == 3
    places = {
        "run and trace": run.text + strings_in(run.json()),
        "run list": listed.text + strings_in(listed.json()),
        "stored items": json.dumps(items, ensure_ascii=False) + strings_in(items),
        "model requests": json.dumps(model_requests, ensure_ascii=False) + strings_in(model_requests),
        "eval report": report.read_text(encoding="utf-8") + junit.read_text(encoding="utf-8"),
    }
    # And the key was redacted where the model's words were stored (its text, reasoning and arguments)
    stored = json.dumps(items)
    assert ("Using ***." in stored, "The key is ***." in stored, "key ***" in stored) == (True, True, True)
    # But no form of the key is anywhere
    assert leaked_forms(places, encodings_of(LITERAL)) == []
