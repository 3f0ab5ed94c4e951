"""`stepwise serve` killed (SIGKILL) while a POST tool call is in flight, then started again on the same store:
what the receiving API saw is at most one request of the call, or two carrying the same Idempotency-Key.

The server runs as its own process (as a user starts it) on the session's DynamoDB Local; the model (an
OpenAI-compatible fake) and the tool API are loopback servers of this test, so they outlive the kill and
record everything they were sent. The tool API holds the first request unanswered, so it is in flight
when the server dies.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.serve_process import ServeProcess
from tests.support.tool_server import Hang, Json, RecordedRequest, ScriptableToolServer

HEADERS = {"x-api-key": "crash"}
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}
WAIT_LIMIT_SECONDS = 120.0
TRANSFER = {"to": "bob", "amount": 5}


def transfer_tool() -> dict[str, Any]:
    return {
        "toolName": "transfer",
        "description": "Send money.",
        "method": "POST",
        "path": "/transfer",
        "parameter": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}},
            "required": ["to", "amount"],
        },
    }


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def tool_api() -> Iterator[ScriptableToolServer]:
    with ScriptableToolServer() as server:
        # The first transfer is held unanswered: the server is killed while it is in flight.
        server.on("/transfer", Hang(seconds=WAIT_LIMIT_SECONDS))
        yield server


@pytest.fixture
def serve_with(
    model: FakeOpenAIServer, tool_api: ScriptableToolServer, dynamodb_local: str, unique_table_name: str, tmp_path: Path
) -> Callable[..., list[str]]:
    """`stepwise serve`'s arguments for a configuration whose one API is the tool API with `settings`."""

    def arguments(**settings: Any) -> list[str]:
        api = {
            "url": tool_api.url,
            "internal": True,
            "maxExecutionTime": 30_000,
            "tools": [transfer_tool()],
            **settings,
        }
        config = {
            "models": {
                "m": {
                    "provider": "openai",
                    "base_url": model.base_url,
                    "model": "fake-model",
                    "capabilities": {"native_tools": True},
                }
            },
            "tools": {"apis": [api]},
            "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        return [
            *("--config", str(tmp_path / "stepwise.yaml")),
            *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
        ]

    return arguments


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def run_view(serve: ServeProcess, run_id: str) -> dict[str, Any]:
    return dict(httpx.get(f"{serve.url}/v1/runs/{run_id}", params={"trace": "true"}, headers=HEADERS).json())


def transfers(tool_api: ScriptableToolServer) -> list[RecordedRequest]:
    return [request for request in tool_api.requests if request.path == "/transfer"]


def start_run(serve: ServeProcess) -> str:
    response = httpx.post(f"{serve.url}/v1/runs", json={"input": "send bob 5"}, headers=HEADERS)
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def approve(serve: ServeProcess, run_id: str, call_id: str) -> None:
    answered = httpx.post(
        f"{serve.url}/v1/runs/{run_id}/approvals/{call_id}", json={"approved": True}, headers=HEADERS, timeout=30
    )
    assert answered.status_code == 200, answered.text


def pending_call(serve: ServeProcess, run_id: str) -> str | None:
    pending = run_view(serve, run_id).get("pending_approvals") or []
    return str(pending[0]["call_id"]) if pending else None


def test_a_post_cut_short_to_an_api_honouring_keys_is_sent_again_with_the_same_key(
    serve_with: Callable[..., list[str]], model: FakeOpenAIServer, tool_api: ScriptableToolServer
) -> None:
    # Given an API that honours idempotency keys, and a model that sends one transfer, then answers
    arguments = serve_with(idempotencyKey={"honoured": True})
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_pay", "name": "transfer", "arguments": TRANSFER}]))
    model.enqueue(body=chat_completion(content="Sent."))
    first = ServeProcess(arguments)
    run_id = start_run(first)
    # When serve is killed while the transfer is in flight, and started again on the same store
    wait_for(lambda: transfers(tool_api), "the transfer to reach the API")
    first.end(signal.SIGKILL)
    tool_api.on("/transfer", Json({"status": "sent"}))
    second = ServeProcess(arguments)
    try:
        run = wait_for(lambda: (view := run_view(second, run_id))["status"] in TERMINAL and view, "the run to end")
    finally:
        second.end(signal.SIGTERM)
    # Then the API saw the transfer twice, both with the same key: it does the work once
    keys = [request.headers.get("idempotency-key") for request in transfers(tool_api)]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]
    # And the run succeeded, its trace saying the second attempt carried that key
    assert run["status"] == "SUCCEEDED"
    (step,) = [step for step in run["trace"] if step["kind"] == "tool"]
    assert (step["attempt"], step["idempotency_key"], step["ok"]) == (2, keys[0], True)


def test_an_approved_post_cut_short_is_not_sent_again_and_a_repeat_waits_for_a_fresh_approval(
    serve_with: Callable[..., list[str]], model: FakeOpenAIServer, tool_api: ScriptableToolServer
) -> None:
    # Given an approval tool whose API does not honour keys, and a model that sends a transfer, sends it
    # again once told its outcome is unknown, then answers
    arguments = serve_with(requiresApproval=True, approvalTimeoutSeconds=300)
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_pay", "name": "transfer", "arguments": TRANSFER}]))
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_again", "name": "transfer", "arguments": TRANSFER}]))
    model.enqueue(body=chat_completion(content="Sent."))
    first = ServeProcess(arguments)
    run_id = start_run(first)
    approve(first, run_id, wait_for(lambda: pending_call(first, run_id), "the transfer to wait for approval"))
    # When serve is killed while the approved transfer is in flight, and started again on the same store
    wait_for(lambda: transfers(tool_api), "the transfer to reach the API")
    first.end(signal.SIGKILL)
    tool_api.on("/transfer", Json({"status": "sent"}))
    second = ServeProcess(arguments)
    try:
        # Then the repeat waits for an approval of its own: the first approval is not reused
        repeat = wait_for(lambda: pending_call(second, run_id), "the repeated transfer to wait for approval")
        waiting = run_view(second, run_id)
        sent_before_the_fresh_approval = len(transfers(tool_api))
        approve(second, run_id, repeat)
        run = wait_for(lambda: (view := run_view(second, run_id))["status"] in TERMINAL and view, "the run to end")
    finally:
        second.end(signal.SIGTERM)
    assert repeat == "call_again"
    assert waiting["status"] == "WAITING_APPROVAL"
    # And the call cut short reached the API once: nothing was sent again until the repeat was approved
    assert sent_before_the_fresh_approval == 1
    keys = [request.headers.get("idempotency-key") for request in transfers(tool_api)]
    assert len(keys) == 2 and keys[0] != keys[1]
    # And the model was told the first call's outcome is unknown, and to check before repeating it
    told = json.dumps(model.requests[1].body)
    assert "outcome of this call to transfer is unknown" in told
    assert run["status"] == "SUCCEEDED"
