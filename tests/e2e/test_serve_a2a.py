"""Each profile of `stepwise serve` is an A2A agent: the official `a2a-sdk` client is the judge.

The client is given only the server's base URL and an API key. The profiles' model is a loopback
OpenAI-compatible server, its replies scripted per test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from stepwise.local.server import LocalApi
from tests.e2e.conftest import native_assistant_config, script_tool_then_slow_answer, serve
from tests.support.openai_server import FakeOpenAIServer, chat_completion

RESEARCHER = {
    "model": "gpt",
    "strategy": "function_calling",
    "description": "Finds facts and cites them.",
    "tools": ["current_time"],
}


@pytest.fixture(scope="module")
def api(model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    config = native_assistant_config(
        model_server.base_url, timeout_seconds=30, more_profiles={"researcher": RESEARCHER}
    )
    with serve(config, Path(tmp_path_factory.mktemp("a2a"))) as served:
        yield served


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def collected(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [each async for each in stream]


def question(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def send(url: str, key: str | None, request: SendMessageRequest, **config: Any) -> list[StreamResponse]:
    headers = {"x-api-key": key} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http, **config)).create_from_url(url)
        return await collected(client.send_message(request))


def test_the_sdk_client_reads_the_card_and_a_send_completes_with_the_answer(
    api: LocalApi, model_server: FakeOpenAIServer
) -> None:
    # Given the model answers at once
    model_server.enqueue(body=chat_completion(content="It is noon."))
    # When the SDK client, given the base URL and a key, sends a message and waits (no streaming)
    [response] = run(send(api.url, "alice", question("What time is it?"), streaming=False))
    # Then the task is completed, its answer in an artifact
    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [get_artifact_text(each) for each in task.artifacts] == ["It is noon."]


def test_a_streamed_send_delivers_status_updates_before_the_final_one(
    api: LocalApi, model_server: FakeOpenAIServer
) -> None:
    # Given a run that calls a tool, then takes its time to answer
    script_tool_then_slow_answer(model_server, "It is noon.")

    async def stream() -> tuple[list[StreamResponse], str]:
        async with httpx.AsyncClient(headers={"x-api-key": "alice"}, timeout=30) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(api.url)
            responses: list[StreamResponse] = []
            status_at_first_update = ""
            async for response in client.send_message(question("Time?")):
                responses.append(response)
                if response.HasField("status_update") and not status_at_first_update:
                    run = await http.get(f"{api.url}/v1/runs/{response.status_update.task_id}")
                    status_at_first_update = run.json()["status"]
            return responses, status_at_first_update

    # When the SDK client streams the message
    responses, status_at_first_update = run(stream())
    # Then the task comes first, working updates follow while the run runs, then the answer and the end
    kinds = [each.WhichOneof("payload") for each in responses]
    states = [each.status_update.status.state for each in responses if each.HasField("status_update")]
    assert kinds[0] == "task" and status_at_first_update == "RUNNING"
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    assert states.count(TaskState.TASK_STATE_WORKING) >= 2
    artifacts = [each.artifact_update.artifact for each in responses if each.HasField("artifact_update")]
    assert [get_artifact_text(each) for each in artifacts] == ["It is noon."]


def test_a_task_is_read_and_cancelled_through_the_sdk_client(api: LocalApi, model_server: FakeOpenAIServer) -> None:
    # Given a run whose model takes its time, sent to return at once
    model_server.enqueue(body=chat_completion(content="late"), delay_seconds=3)

    async def scenario() -> tuple[Task, Task, Task]:
        async with httpx.AsyncClient(headers={"authorization": "Bearer bob"}, timeout=30) as http:
            client = await ClientFactory(
                ClientConfig(httpx_client=http, streaming=False, polling=True)
            ).create_from_url(f"{api.url}/a2a/researcher")
            [response] = await collected(client.send_message(question("Slow one?")))
            # When the client reads the task, then cancels it
            read = await client.get_task(GetTaskRequest(id=response.task.id))
            cancelled = await client.cancel_task(CancelTaskRequest(id=response.task.id))
            return response.task, read, cancelled

    started, read, cancelled = run(scenario())
    # Then the task read is the one started, and it ends cancelled
    assert (read.id, read.context_id) == (started.id, started.context_id)
    assert read.status.state == TaskState.TASK_STATE_WORKING
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED


def test_another_callers_task_is_not_found(api: LocalApi, model_server: FakeOpenAIServer) -> None:
    # Given alice's completed task
    model_server.enqueue(body=chat_completion(content="Mine."))
    [response] = run(send(api.url, "alice", question("Mine?"), streaming=False))

    async def read_as_mallory() -> None:
        async with httpx.AsyncClient(headers={"x-api-key": "mallory"}, timeout=30) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(api.url)
            await client.get_task(GetTaskRequest(id=response.task.id))

    # When another caller asks for it, then it is not found
    with pytest.raises(TaskNotFoundError):
        run(read_as_mallory())


def test_a_method_without_a_key_is_401_and_the_card_is_public(api: LocalApi) -> None:
    # When a client without a key reads the card, then calls a method
    card = httpx.get(f"{api.url}/.well-known/agent-card.json")
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "run-1"}}
    refused = httpx.post(f"{api.url}/a2a/assistant", json=rpc, headers={"a2a-version": "1.0"})
    # Then the card is served, the method refused
    assert (card.status_code, card.json()["name"]) == (200, "assistant")
    assert (refused.status_code, refused.json()["error"]["type"]) == (401, "unauthorized")


def test_each_profile_has_its_card_naming_its_endpoint(api: LocalApi) -> None:
    # When the researcher's card is read, and that of a profile that does not exist
    card = httpx.get(f"{api.url}/a2a/researcher/.well-known/agent-card.json").json()
    missing = httpx.get(f"{api.url}/a2a/nobody/.well-known/agent-card.json")
    # Then the card describes the profile, its endpoint and the API key; there is no card for no profile
    assert (card["name"], card["description"]) == ("researcher", "Finds facts and cites them.")
    assert {each["url"] for each in card["supportedInterfaces"]} == {f"{api.url}/a2a/researcher"}
    assert set(card["securitySchemes"]) == {"apiKey", "bearer"}
    assert [skill["name"] for skill in card["skills"]] == ["researcher", "current_time"]
    assert missing.status_code == 404


def test_a_follow_up_in_the_same_context_is_a_turn_of_its_session(
    api: LocalApi, model_server: FakeOpenAIServer
) -> None:
    # Given a first task's answer, in the context the server gave it
    model_server.enqueue(body=chat_completion(content="The capital is Paris."))
    [first] = run(send(api.url, "carol", question("Capital of France?"), streaming=False))
    model_server.enqueue(body=chat_completion(content="About 2 million."))
    follow_up = question("And its population?")
    follow_up.message.context_id = first.task.context_id
    # When a follow-up is sent in that context
    [second] = run(send(api.url, "carol", follow_up, streaming=False))
    # Then it is another task of the same context, and the model was given the first turn
    assert second.task.id != first.task.id and second.task.context_id == first.task.context_id
    contents = [str(message.get("content")) for message in model_server.requests[-1].body["messages"]]
    assert "The capital is Paris." in contents


def test_a_resent_message_gets_the_first_sends_task(api: LocalApi, model_server: FakeOpenAIServer) -> None:
    # Given a message sent once and answered
    model_server.enqueue(body=chat_completion(content="Once."))
    message = question("Only once?")
    [first] = run(send(api.url, "dave", message, streaming=False))
    calls = len(model_server.requests)
    # When the client sends the same message again (a retry: same message id)
    [again] = run(send(api.url, "dave", message, streaming=False))
    # Then it is the same task, and no second run asked the model
    assert (again.task.id, again.task.status.state) == (first.task.id, TaskState.TASK_STATE_COMPLETED)
    assert len(model_server.requests) == calls


def test_a_task_id_that_is_no_run_id_names_no_task(api: LocalApi) -> None:
    # When a task id with a path in it is asked for
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "run-1/cancel"}}
    answer = httpx.post(f"{api.url}/a2a/assistant", json=rpc, headers={"x-api-key": "erin", "a2a-version": "1.0"})
    # Then it is not found (A2A's TaskNotFoundError), and no other route of the API was reached
    assert answer.json()["error"]["code"] == -32001


@pytest.mark.parametrize("binding", [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON])
def test_subscribing_to_a_task_that_ended_is_refused_before_any_event(
    api: LocalApi, model_server: FakeOpenAIServer, binding: TransportProtocol
) -> None:
    # Given a completed task
    model_server.enqueue(body=chat_completion(content="Done already."))
    [response] = run(send(api.url, "frank", question("Quick one?"), streaming=False))
    received: list[StreamResponse] = []

    async def subscribe() -> None:
        async with httpx.AsyncClient(headers={"x-api-key": "frank"}, timeout=30) as http:
            config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding.value])
            client = await ClientFactory(config).create_from_url(api.url)
            async for event in client.subscribe(SubscribeToTaskRequest(id=response.task.id)):
                received.append(event)

    # When the SDK client subscribes to it, over each binding
    with pytest.raises(UnsupportedOperationError, match="has ended"):
        run(subscribe())
    # Then it is the spec's UnsupportedOperationError, and nothing of the task was replayed before it
    assert received == []
