"""`stepwise serve`: telling a running run something, and pausing it, over real HTTP, with the real state machine
(its AwaitResume callback task) and an OpenAI-compatible model on loopback that records what it was sent and can
hold a request until the test lets it through."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve
from tests.support.approval_runs import TERMINAL, finished, poll, start
from tests.support.openai_server import FakeOpenAIServer, ScriptedReply, chat_completion

ADD = {"name": "calculator", "arguments": {"expression": "1+1"}}


class Gate:
    """Holds each model request, once closed, until opened: the run is then inside its model call."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self._open = threading.Event()
        self._open.set()

    def close(self) -> None:
        self.arrived.clear()
        self._open.clear()

    def open(self) -> None:
        self._open.set()

    def __call__(self, body: Any) -> ScriptedReply | None:
        self.arrived.set()
        self._open.wait(30)
        return None


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.fixture(scope="module")
def model(gate: Gate) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(validator=gate) as server:
        yield server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAIServer) -> Iterator[LocalApi]:
    config = {
        "models": {
            "gpt": {
                "provider": "openai",
                "base_url": model.base_url,
                "model": "gpt-fake",
                "api_key": "sk-provider",
                "timeout_seconds": 30,
                "capabilities": {"native_tools": True},
            }
        },
        "tools": {"builtin": ["calculator"]},
        "profiles": {"assistant": {"model": "gpt", "strategy": "function_calling"}},
        "default_profile": "assistant",
    }
    with serve(config, tmp_path_factory.mktemp("steering")) as served:
        yield served


def caller(api: LocalApi, key: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"x-api-key": key}, timeout=30)


def inside_first_call(client: httpx.Client, model: FakeOpenAIServer, gate: Gate, *, answers: bool = True) -> str:
    """A run whose model asks for the calculator, then answers "Two." (a run not expected to ask again is
    scripted no answer, so nothing is left queued for the next test); returned while its first call is held."""
    model.enqueue(body=chat_completion(tool_calls=[ADD]))
    if answers:
        model.enqueue(body=chat_completion(content="Two."))
    gate.close()
    run_id = start(client, "What is 1+1?")
    assert gate.arrived.wait(30)
    return run_id


def test_a_message_posted_to_a_running_run_is_in_its_next_model_request_and_its_trace(
    api: LocalApi, model: FakeOpenAIServer, gate: Gate
) -> None:
    client = caller(api, "steerer")
    # Given a run inside its first model call
    run_id = inside_first_call(client, model, gate)
    # When its owner tells it something, and the call returns
    posted = client.post(f"/v1/runs/{run_id}/messages", json={"content": "Use the EU account instead."})
    gate.open()
    done = finished(client, run_id)
    # Then the message was stored, the run's next model request carried it after the tool's result, and the
    # run succeeded
    assert posted.status_code == 202, posted.text
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Two.")
    sent = [(message["role"], message.get("content")) for message in model.requests[-1].body["messages"]]
    assert sent[-1] == ("user", "Use the EU account instead.")
    assert sent[-2][0] == "tool"
    # and the trace shows it, with who told it
    trace = client.get(f"/v1/runs/{run_id}", params={"trace": "true"}).json()["trace"]
    told = [step for step in trace if step["kind"] == "message"]
    assert [(step["observation"], step["call_id"]) for step in told] == [
        ("Use the EU account instead.", posted.json()["message_id"])
    ]
    assert "steerer" in told[0]["note"]


def test_a_paused_run_calls_no_model_until_resumed_then_succeeds(
    api: LocalApi, model: FakeOpenAIServer, gate: Gate
) -> None:
    client = caller(api, "pauser")
    # Given a run inside its first model call, asked to pause
    run_id = inside_first_call(client, model, gate)
    calls_before = len(model.requests)
    asked = client.post(f"/v1/runs/{run_id}/pause")
    assert asked.status_code == 200, asked.text
    assert asked.json()["pause"]["requested_by"] == "pauser"
    # When the call returns
    gate.open()
    paused = poll(client, run_id, lambda run: run["status"] in TERMINAL | {"PAUSED"})
    # Then the run waits at the next iteration boundary, its tool run, with no further model call
    assert paused["status"] == "PAUSED", paused
    assert paused["pause"]["iteration"] == 1
    assert len(model.requests) == calls_before + 1
    # When it is resumed, Then it goes on and succeeds with one more call
    resumed = client.post(f"/v1/runs/{run_id}/resume")
    assert resumed.status_code == 200, resumed.text
    done = finished(client, run_id)
    assert (done["status"], done["answer"], done.get("pause")) == ("SUCCEEDED", "Two.", None)
    assert len(model.requests) == calls_before + 2


def test_a_paused_run_can_be_cancelled(api: LocalApi, model: FakeOpenAIServer, gate: Gate) -> None:
    client = caller(api, "canceller")
    # Given a run waiting paused
    run_id = inside_first_call(client, model, gate, answers=False)
    calls_before = len(model.requests)
    client.post(f"/v1/runs/{run_id}/pause")
    gate.open()
    assert poll(client, run_id, lambda run: run["status"] in TERMINAL | {"PAUSED"})["status"] == "PAUSED"
    # When its owner cancels it
    cancelled = client.post(f"/v1/runs/{run_id}/cancel")
    # Then it ends CANCELLED without another model call, and there is nothing left to resume
    assert cancelled.status_code == 200, cancelled.text
    assert finished(client, run_id)["status"] == "CANCELLED"
    assert len(model.requests) == calls_before + 1
    assert client.post(f"/v1/runs/{run_id}/resume").status_code == 409


def test_an_ended_run_refuses_messages_pause_and_resume(api: LocalApi, model: FakeOpenAIServer) -> None:
    client = caller(api, "late")
    # Given a run that ended
    model.enqueue(body=chat_completion(content="Done."))
    run_id = start(client, "Say done.")
    assert finished(client, run_id)["status"] == "SUCCEEDED"
    # When it is told something, paused or resumed
    answers = [
        client.post(f"/v1/runs/{run_id}/messages", json={"content": "One more thing."}),
        client.post(f"/v1/runs/{run_id}/pause"),
        client.post(f"/v1/runs/{run_id}/resume"),
    ]
    # Then each is 409 run_ended; and another caller's is 404
    assert [(answer.status_code, answer.json()["error"]["type"]) for answer in answers] == [(409, "run_ended")] * 3
    assert caller(api, "stranger").post(f"/v1/runs/{run_id}/pause").status_code == 404
