"""A streamed chat completion through `stepwise serve` is sent as the run goes, not once it has ended.

The profile's model is a loopback OpenAI-compatible server whose second call is slow, so the run is
still running while its first steps are stored; the official `openai` SDK reads the same stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI

from stepwise.local.server import LocalApi
from tests.e2e.conftest import native_assistant_config, script_tool_then_slow_answer, serve
from tests.support.openai_server import FakeOpenAIServer, chat_completion

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}


@pytest.fixture(scope="module")
def api(model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    config = native_assistant_config(model_server.base_url, timeout_seconds=10)
    with serve(config, Path(tmp_path_factory.mktemp("chat-stream"))) as served:
        yield served


def sse_data(line: str) -> dict[str, Any] | None:
    if not line.startswith("data: ") or line == "data: [DONE]":
        return None
    data: dict[str, Any] = json.loads(line.removeprefix("data: "))
    return data


def test_the_first_step_chunk_arrives_while_the_run_is_still_running(
    api: LocalApi, model_server: FakeOpenAIServer
) -> None:
    # Given a run whose model answers slowly on its second call: slowly enough that, however busy the
    # machine, the first step's chunk (polled every 0.2 s) arrives before the run ends (2 s was not, once)
    model_server.enqueue(body=chat_completion(tool_calls=[{"name": "current_time", "arguments": {}}]))
    model_server.enqueue(body=chat_completion(content="It is noon."), delay_seconds=6)
    headers = {"authorization": "Bearer sk-streamer"}
    with httpx.Client(base_url=api.url, headers=headers, timeout=30) as client:
        body = {"model": "assistant", "messages": [{"role": "user", "content": "Time?"}], "stream": True}
        # When the caller streams the completion and asks for the run as soon as a step arrives
        status_at_first_step = None
        chunks: list[dict[str, Any]] = []
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines: list[str] = []
            for line in response.iter_lines():
                lines += [line] if line else []
                chunk = sse_data(line)
                if chunk is None:
                    continue
                chunks.append(chunk)
                if "stepwise_step" in chunk and status_at_first_step is None:
                    run_id = chunk["id"].removeprefix("chatcmpl-")
                    status_at_first_step = client.get(f"/v1/runs/{run_id}").json()["status"]
        # Then a step was received while the run had not ended, and the stream went on to the answer
    assert status_at_first_step is not None
    assert status_at_first_step not in TERMINAL
    steps = [chunk["stepwise_step"]["kind"] for chunk in chunks if "stepwise_step" in chunk]
    assert steps[:3] == ["llm", "parse", "tool"]
    content = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"])
    assert content == "It is noon."
    assert lines[-1] == "data: [DONE]"


def test_the_openai_sdk_reads_a_stream_with_steps_to_its_end(api: LocalApi, model_server: FakeOpenAIServer) -> None:
    # Given a run with a tool call before its answer, and the SDK as users configure it
    script_tool_then_slow_answer(model_server, "It is noon.")
    client = OpenAI(base_url=f"{api.url}/v1", api_key="sk-streamer", max_retries=0)
    # When the SDK streams the completion
    stream = client.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "Time?"}], stream=True
    )
    chunks = list(stream)
    # Then it assembles the answer alone, finishes with "stop", and keeps the steps as an extra field
    content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert content == "It is noon."
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    kinds = [
        (chunk.model_extra or {})["stepwise_step"]["kind"]
        for chunk in chunks
        if "stepwise_step" in (chunk.model_extra or {})
    ]
    assert kinds[:3] == ["llm", "parse", "tool"]
