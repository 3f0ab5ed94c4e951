"""A canary secret echoed back by a tool in every common encoding reaches no item, response, log or model.

The canary lives in SSM and is the query key of an API. The API answers with the canary in each form of
`tests.unit.test_secret_encodings.ENCODINGS` (percent-encoding in either case, of every byte, twice; HTML
entities named, decimal and hex; JSON and Python escapes; upper case; base64, base64url, base32 and hex
of the canary and of its halves).
The run goes through `stepwise serve` and the real state machine with an OpenAI-compatible model on
loopback; every logger is at DEBUG. Afterwards the stored items, the API's answers (trace included),
the log records, stdout/stderr and every request the model received are searched for each encoding, both
as they are written and, for JSON documents, in each of their strings (where JSON's own escaping is undone).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from tests.e2e.conftest import get_tool, http_api, serve
from tests.e2e.test_secret_canary import scan_table
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Raw, ScriptableToolServer
from tests.unit.test_secret_encodings import CANARY, ENCODINGS

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
    deadline = time.monotonic() + 60
    while True:
        response = client.get(f"/v1/runs/{run_id}", params={"trace": "true"})
        if response.json()["status"] in TERMINAL or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


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


def leaked_forms(places: dict[str, str]) -> list[tuple[str, str]]:
    """(place, encoding) for each encoded form of the canary found in a place."""
    return [(place, name) for place, text in places.items() for name, form in ENCODINGS.items() if form in text]


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
