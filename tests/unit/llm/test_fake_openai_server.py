"""FakeOpenAIServer is faithful enough for the official OpenAI SDK, streaming included."""

from __future__ import annotations

import httpx
import openai
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from tests.support.openai_server import FakeOpenAIServer, chat_completion, chat_completion_chunks


def sdk_client(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-fake", max_retries=0)


def test_the_sdk_reads_a_scripted_completion(openai_server: FakeOpenAIServer) -> None:
    # Given a scripted completion with a tool call
    openai_server.enqueue(body=chat_completion(tool_calls=[{"id": "call_9", "name": "f", "arguments": {"x": 1}}]))
    # When the SDK asks for a completion
    result = sdk_client(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    # Then it reads the call and the request was recorded
    (tool_call,) = result.choices[0].message.tool_calls or []
    assert isinstance(tool_call, ChatCompletionMessageFunctionToolCall)
    assert (tool_call.id, tool_call.function.arguments) == ("call_9", '{"x": 1}')
    assert openai_server.requests[0].body["messages"] == [{"role": "user", "content": "hi"}]


def test_the_sdk_streams_scripted_chunks(openai_server: FakeOpenAIServer) -> None:
    # Given scripted chunks
    openai_server.enqueue(body=chat_completion_chunks(["Hel", "lo", "!"]))
    # When the SDK streams a completion
    stream = sdk_client(openai_server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    # Then the deltas arrive in order, ending with the stop chunk
    chunks = list(stream)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Hello!"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_replies_are_served_in_order_then_the_default(openai_server: FakeOpenAIServer) -> None:
    # Given one queued error and a configured default
    openai_server.enqueue(status=503, body={"error": {"message": "busy"}})
    openai_server.default(body=chat_completion(content="default"))
    url = f"{openai_server.base_url}/chat/completions"
    # When three requests are sent
    responses = [httpx.post(url, json={"n": n}) for n in range(3)]
    # Then the queued reply comes first, then the default every time
    assert [response.status_code for response in responses] == [503, 200, 200]
    assert [r.json()["choices"][0]["message"]["content"] for r in responses[1:]] == ["default", "default"]
    assert [request.body["n"] for request in openai_server.requests] == [0, 1, 2]


def test_other_paths_are_not_found(openai_server: FakeOpenAIServer) -> None:
    # Given the server, when another path is posted to, then it answers 404 and records nothing
    assert httpx.post(f"{openai_server.base_url}/embeddings", json={}).status_code == 404
    assert openai_server.requests == []
