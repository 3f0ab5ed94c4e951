"""The streaming function of template.yaml (`functions/stream`), served as on AWS: its ASGI app under uvicorn
on a loopback port, called as the Lambda Web Adapter calls it (API Gateway's request context in
`x-amzn-request-context`), with runs executed by the local engine on the real state machine definition.

The profile's model is a loopback OpenAI-compatible server whose second call is slow, so the run is still
running when its first steps are stored: the first event must reach the client before the run ends.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import Role, SendMessageRequest, TaskState
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.lambda_runtime import load_handler
from stepwise.local.server import LocalApi
from stepwise.models.messages import ChatMessage
from stepwise.steps.runs import create_run
from tests.conftest import PROJECT_ROOT
from tests.e2e.conftest import native_assistant_config, script_tool_then_slow_answer, serve
from tests.support.asgi_server import served_on_loopback
from tests.support.openai_server import FakeOpenAIServer, chat_completion

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}


@pytest.fixture(scope="module")
def api(model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    config = native_assistant_config(model_server.base_url, timeout_seconds=10)
    with serve(config, Path(tmp_path_factory.mktemp("stream-function"))) as served:
        yield served


@pytest.fixture(scope="module")
def stream_url(api: LocalApi) -> Iterator[str]:
    # functions/stream/app.py imported as Lambda imports it, with the environment the local stack set
    app = load_handler(PROJECT_ROOT / "functions" / "stream", "app.app", module_prefix=f"stream_{uuid.uuid4().hex[:8]}")
    with served_on_loopback(app) as url:
        yield url


def gateway_context(api_key_id: str) -> dict[str, str]:
    """The header the Web Adapter adds: the request context API Gateway filled in after the authorizer."""
    context = {"stage": "prod", "identity": {"apiKeyId": api_key_id, "sourceIp": "203.0.113.9"}}
    return {"x-amzn-request-context": json.dumps(context)}


def start_run(api: LocalApi, key: str) -> str:
    answer = httpx.post(f"{api.url}/v1/runs", json={"input": "What time is it?"}, headers={"x-api-key": key})
    assert answer.status_code == 202, answer.text
    run_id: str = answer.json()["run_id"]
    return run_id


def run_status(api: LocalApi, run_id: str, key: str) -> str:
    status: str = httpx.get(f"{api.url}/v1/runs/{run_id}", headers={"x-api-key": key}).json()["status"]
    return status


def within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def reads_stay_put(meter: DynamoDBMeter, seconds: float = 1.0) -> bool:
    """Whether no request reached the store for `seconds` (five polls' time)."""
    before = meter.total_calls
    time.sleep(seconds)
    return meter.total_calls == before


def test_run_events_stream_their_first_step_before_the_run_ends(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given alice's run, whose model answers slowly on its second call
    script_tool_then_slow_answer(model_server, "It is noon.")
    run_id = start_run(api, "alice")
    # When alice follows it through the streaming function as server-sent events
    headers = {"accept": "text/event-stream", **gateway_context("alice")}
    status_at_first_step = None
    events: list[str] = []
    with (
        httpx.Client(base_url=stream_url, timeout=30) as client,
        client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event: "):
                events.append(line.removeprefix("event: "))
                if events == ["step"]:
                    status_at_first_step = run_status(api, run_id, "alice")
    # Then the first step arrived while the run was still going, and the stream ended with the run
    assert status_at_first_step is not None and status_at_first_step not in TERMINAL
    assert events[-1] == "end"
    assert events.count("step") >= 4


def test_a_streamed_chat_completion_sends_steps_before_the_run_ends(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given a model that answers slowly on its second call
    script_tool_then_slow_answer(model_server, "It is noon.")
    body = {"model": "assistant", "messages": [{"role": "user", "content": "Time?"}], "stream": True}
    # When bob asks for a streamed chat completion through the streaming function
    status_at_first_step = None
    chunks: list[dict[str, Any]] = []
    with (
        httpx.Client(base_url=stream_url, timeout=30) as client,
        client.stream("POST", "/v1/chat/completions", json=body, headers=gateway_context("bob")) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        for line in lines:
            if line == "data: [DONE]":
                continue
            chunk = json.loads(line.removeprefix("data: "))
            chunks.append(chunk)
            if "stepwise_step" in chunk and status_at_first_step is None:
                status_at_first_step = run_status(api, chunk["id"].removeprefix("chatcmpl-"), "bob")
    # Then steps came as chunks, the answer after them, and the stream closed with [DONE]
    assert lines[-1] == "data: [DONE]"
    assert [chunk["stepwise_step"]["kind"] for chunk in chunks if "stepwise_step" in chunk][:3] == [
        "llm",
        "parse",
        "tool",
    ]
    content = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"])
    assert content == "It is noon."
    assert status_at_first_step is not None


def test_another_callers_run_is_not_found_through_the_streaming_function(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given carol's run
    model_server.enqueue(body=chat_completion(content="Noon."))
    run_id = start_run(api, "carol")
    # When mallory asks for its events, streamed or not
    streamed = httpx.get(
        f"{stream_url}/v1/runs/{run_id}/events",
        headers={"accept": "text/event-stream", **gateway_context("mallory")},
        timeout=30,
    )
    polled = httpx.get(f"{stream_url}/v1/runs/{run_id}/events", headers=gateway_context("mallory"), timeout=30)
    # Then both are 404, as for a run that does not exist
    assert (streamed.status_code, polled.status_code) == (404, 404)
    assert streamed.json()["error"]["type"] == polled.json()["error"]["type"]


def test_a_request_without_api_gateways_context_has_no_identity(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given dave's run
    model_server.enqueue(body=chat_completion(content="Noon."))
    run_id = start_run(api, "dave")
    # When a request reaches the app with dave's key but not through API Gateway (no request context)
    answer = httpx.get(
        f"{stream_url}/v1/runs/{run_id}/events",
        headers={"accept": "text/event-stream", "x-api-key": "dave", "authorization": "Bearer dave"},
        timeout=30,
    )
    # Then the key is not taken as an identity: 401
    assert answer.status_code == 401


def test_a_poll_through_the_streaming_function_answers_the_apis_json(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given erin's run, ended
    model_server.enqueue(body=chat_completion(content="Noon."))
    run_id = start_run(api, "erin")
    # When erin polls the events as JSON (no Accept: text/event-stream) until the run is done
    with httpx.Client(base_url=stream_url, headers=gateway_context("erin"), timeout=30) as client:
        first = client.get(f"/v1/runs/{run_id}/events")
        pages = [first.json()]
        while not pages[-1]["done"]:
            pages.append(client.get(f"/v1/runs/{run_id}/events", params={"after": pages[-1]["next_cursor"]}).json())
    # Then the pages are the API's JSON: the run's steps in order, from its model call to its end
    assert (first.status_code, first.headers["content-type"]) == (200, "application/json")
    kinds = [event["kind"] for page in pages for event in page["events"]]
    assert kinds[:2] == ["llm", "parse"]
    assert pages[-1]["status"] == "SUCCEEDED"


def test_a_follower_that_leaves_stops_the_functions_reads_of_the_store(api: LocalApi) -> None:
    # Given a run of frank's that stays open (stored QUEUED, never started), and a streaming function whose
    # DynamoDB requests are counted at the wire from its first request on
    run_id = create_run(
        api.environment.runtime,
        messages=[ChatMessage(role="user", content="Hold on.")],
        owner="frank",
        profile="assistant",
    ).run_id
    meter = DynamoDBMeter().install()
    try:
        app = load_handler(
            PROJECT_ROOT / "functions" / "stream", "app.app", module_prefix=f"stream_{uuid.uuid4().hex[:8]}"
        )
        with served_on_loopback(app) as url:
            headers = {"accept": "text/event-stream", **gateway_context("frank")}
            # When frank follows it, the function polls the store a few times, and frank leaves
            with httpx.stream("GET", f"{url}/v1/runs/{run_id}/events", headers=headers, timeout=30) as response:
                assert response.status_code == 200
                assert within(10, lambda: meter.total_calls >= 6)
            # Then within 5 s the function makes no more requests to the store
            assert within(5, lambda: reads_stay_put(meter))
    finally:
        meter.uninstall()


def test_the_a2a_sdk_client_gets_its_answer_through_the_streaming_function(
    model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given a model that answers at once, and the official A2A client behind API Gateway's context for frank
    model_server.enqueue(body=chat_completion(content="It is noon."))
    request = SendMessageRequest(message=new_text_message("What time is it?", role=Role.ROLE_USER))

    async def send() -> Any:
        async with httpx.AsyncClient(headers=gateway_context("frank"), timeout=30) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(stream_url)
            return [response async for response in client.send_message(request)]

    # When it reads the card and sends a message through the streaming function (the A2A app on AWS)
    [response] = asyncio.run(send())
    # Then the task completed with the answer, as frank's run
    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [get_artifact_text(each) for each in response.task.artifacts] == ["It is noon."]


def test_an_mcp_client_calls_a_profile_through_the_streaming_function(
    api: LocalApi, model_server: FakeOpenAIServer, stream_url: str
) -> None:
    # Given a model that answers at once
    model_server.enqueue(body=chat_completion(content="It is noon."))

    async def called() -> Any:
        http = httpx2.AsyncClient(headers=gateway_context("grace"), timeout=120)
        async with Client(streamable_http_client(f"{stream_url}/mcp", http_client=http)) as client:
            return await client.call_tool("assistant", {"question": "What time is it?"})

    # When grace's MCP client calls the profile's tool through the streaming function, as on AWS
    result = anyio.run(called)
    # Then the result is the run's answer, and the run is grace's
    assert ([block.text for block in result.content if isinstance(block, TextContent)], result.is_error) == (
        ["It is noon."],
        False,
    )
    assert run_status(api, result.meta["stepwise/run_id"], "grace") == "SUCCEEDED"


def test_an_mcp_request_without_an_identity_is_401_with_a_bearer_challenge(stream_url: str) -> None:
    # When an MCP request reaches the app with a key but not through API Gateway (no request context)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"x-api-key": "dave", "accept": "application/json, text/event-stream"}
    answer = httpx.post(f"{stream_url}/mcp", json=listing, headers=headers, timeout=30)
    # Then it is refused, 401, saying the key goes as a bearer token
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, 'Bearer realm="stepwise"')
