"""`stepwise serve` over real HTTP on loopback: runs posted, executed by the local engine, and polled.

One server for the module (each test uses its own API keys, so its own owner); the runs use a scripted
model that calls the calculator before answering, and keyword intent routing to a finance profile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from stepwise.local.server import LocalApi
from stepwise.steps.api import ROUTES
from tests.e2e.conftest import serve
from tests.integration.test_api_handler import api_config
from tests.support.polling import run_seen, wait_for

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT"}
SYNC_TIMEOUT_SECONDS = 1.0


def react(action: str, action_input: Any, thought: str) -> dict[str, Any]:
    block = json.dumps({"action": action, "action_input": action_input})
    return {"content": f"Thought: {thought}\n```json\n{block}\n```"}


CONFIG = api_config(
    models={
        "m": {
            "provider": "scripted",
            "scenarios": [
                {"match": "invoice", "turns": [react("Final Answer", "Your invoice is paid.", "Easy.")]},
                {
                    "match": "slow",
                    "turns": [{**react("Final Answer", "Done, slowly.", "Hm."), "latency_ms": 2500}],
                },
                {
                    "turns": [
                        react("calculator", {"expression": "6*7"}, "I should compute it."),
                        react("Final Answer", "6 times 7 is 42.", "I have the result."),
                    ]
                },
            ],
        }
    },
    tools={"builtin": ["calculator"]},
    api={"sync_timeout_seconds": SYNC_TIMEOUT_SECONDS},
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(CONFIG, tmp_path_factory.mktemp("serve")) as served:
        yield served


def caller(api: LocalApi, key: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"x-api-key": key}, timeout=30)


def finished(client: httpx.Client, run_id: str, *, trace: bool = False) -> dict[str, Any]:
    """The run once it ended (polled as a client would); fails naming its last status if it does not end."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}", params={"trace": "true"} if trace else None).json()
        return body

    return wait_for(read, lambda run: run["status"] in TERMINAL, what=f"run {run_id} ended", shown=run_seen)


def test_a_posted_question_is_answered_and_its_trace_shows_the_tool_call(api: LocalApi) -> None:
    client = caller(api, "alice")
    # When a question is posted
    accepted = client.post("/v1/runs", json={"input": "What is 6 times 7?"})
    # Then it is accepted, and polling its run gives the answer with the tool call in the trace
    assert (accepted.status_code, accepted.json()["status"]) == (202, "QUEUED")
    run = finished(client, accepted.json()["run_id"], trace=True)
    assert (run["status"], run["answer"], run["stop_reason"], run["iterations"]) == (
        "SUCCEEDED",
        "6 times 7 is 42.",
        "final_answer",
        2,
    )
    tool_steps = [step for step in run["trace"] if step["kind"] == "tool"]
    assert [(step["tool"], step["arguments"], step["observation"]) for step in tool_steps] == [
        ("calculator", {"expression": "6*7"}, "42")
    ]
    assert run["usage"]["tool_calls"] == 1 and run["usage"]["llm_calls"] == 2


def test_an_unknown_run_id_is_not_found(api: LocalApi) -> None:
    # When a run id nobody created is asked for
    response = caller(api, "alice").get("/v1/runs/0123456789abcdef0123456789abcdef")
    # Then it is 404 with the error shape
    assert (response.status_code, response.json()["error"]["type"]) == (404, "not_found")


def test_another_owners_run_is_not_found(api: LocalApi) -> None:
    # Given a run posted with one key
    run_id = caller(api, "alice").post("/v1/runs", json={"input": "What is 6 times 7?"}).json()["run_id"]
    # When another key asks for it, by id and by execution ARN
    mallory = caller(api, "mallory")
    by_id = mallory.get(f"/v1/runs/{run_id}")
    by_arn = mallory.get(f"/v1/runs/arn:aws:states:us-east-1:000000000000:execution:AgentStateMachine:{run_id}")
    # Then it does not exist for them
    assert (by_id.status_code, by_arn.status_code) == (404, 404)


def test_a_run_is_read_by_its_execution_arn(api: LocalApi) -> None:
    client = caller(api, "alice")
    # Given a run that ended
    run_id = client.post("/v1/runs", json={"input": "What is 6 times 7?"}).json()["run_id"]
    finished(client, run_id)
    # When it is read by the ARN of its execution
    response = client.get(f"/v1/runs/arn:aws:states:us-east-1:000000000000:execution:AgentStateMachine:{run_id}")
    # Then it is the same run
    assert (response.status_code, response.json()["answer"]) == (200, "6 times 7 is 42.")


def test_an_invoice_question_runs_under_the_finance_profile(api: LocalApi) -> None:
    client = caller(api, "bob")
    # When a question about an invoice is posted
    accepted = client.post("/v1/runs", json={"messages": [{"role": "user", "content": "Is my invoice paid?"}]})
    # Then intent routing chose the finance profile, and the run answered
    assert (accepted.json()["intent"], accepted.json()["profile"]) == ({"intent-route": "Finance"}, "finance")
    run = finished(client, accepted.json()["run_id"])
    assert (run["profile"], run["answer"]) == ("finance", "Your invoice is paid.")


def test_an_idempotency_key_gives_one_run_per_body(api: LocalApi) -> None:
    client = caller(api, "carol")
    headers = {"Idempotency-Key": "checkout-7"}
    # When a request is repeated with its Idempotency-Key, then the key is sent with another body
    first = client.post("/v1/runs", json={"input": "What is 6 times 7?"}, headers=headers)
    repeat = client.post("/v1/runs", json={"input": "What is 6 times 7?"}, headers=headers)
    other = client.post("/v1/runs", json={"input": "What is 7 times 6?"}, headers=headers)
    # Then the repeat is the same run, and the other body is a conflict
    assert (first.status_code, repeat.status_code) == (202, 202)
    assert repeat.json()["run_id"] == first.json()["run_id"]
    assert (other.status_code, other.json()["error"]["type"]) == (409, "idempotency_conflict")


def test_a_session_run_continues_from_the_earlier_turns(api: LocalApi) -> None:
    client = caller(api, "dora")
    # Given a first run of a session that ended
    first = client.post("/v1/runs", json={"input": "What is 6 times 7?", "session_id": "math"}).json()
    finished(client, first["run_id"])
    # When the next question is posted in the session
    second = client.post("/v1/runs", json={"input": "And 7 times 6?", "session_id": "math"}).json()
    finished(client, second["run_id"])
    # Then the second run's conversation starts with the first turn's question and answer
    messages = api.environment.runtime.store.list_messages(second["run_id"])
    assert [(message.role, message.content) for message in messages[:3]] == [
        ("user", "What is 6 times 7?"),
        ("assistant", "6 times 7 is 42."),
        ("user", "And 7 times 6?"),
    ]


def test_a_chat_completion_slower_than_the_wait_is_504_and_its_run_can_be_polled(api: LocalApi) -> None:
    client = caller(api, "erin")
    # When a chat completion is asked for that takes longer than the configured wait
    response = client.post(
        "/v1/chat/completions", json={"model": "default", "messages": [{"role": "user", "content": "slow one"}]}
    )
    # Then the answer is 504 naming the run, and polling that run gives its answer
    assert (response.status_code, response.json()["error"]["type"]) == (504, "timeout")
    run = finished(client, response.json()["error"]["details"]["run_id"])
    assert (run["status"], run["answer"]) == ("SUCCEEDED", "Done, slowly.")


def test_the_openapi_document_is_valid_and_lists_every_route(api: LocalApi) -> None:
    # When the OpenAPI document is fetched
    response = caller(api, "alice").get("/v1/openapi.json")
    document = response.json()
    # Then it is a valid OpenAPI document with every route of the API
    validate(document)
    listed = {(method.upper(), path) for path, methods in document["paths"].items() for method in methods}
    assert listed == set(ROUTES)
