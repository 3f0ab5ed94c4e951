"""The official `openai` SDK against `stepwise serve --demo`: its usual requests, plain and streaming."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from openai import OpenAI

from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.server import LocalApi

QUESTION = "What's the weather in Paris today, and how much is 100 EUR in US dollars?"


@pytest.fixture(scope="module")
def api() -> Iterator[LocalApi]:
    with LocalApi(
        config_dir=PROJECT_ROOT / "config", config_file="demo.yaml", demo=True, retry_interval_scale=0.0
    ) as served:
        yield served


@pytest.fixture
def client(api: LocalApi) -> OpenAI:
    # API Gateway reads the API key from x-api-key; the SDK's own key header goes unused.
    return OpenAI(base_url=f"{api.url}/v1", api_key="unused", default_headers={"x-api-key": "sdk"}, max_retries=0)


def test_a_chat_completion_is_the_agents_answer_with_its_usage(client: OpenAI) -> None:
    # When the SDK asks for a completion
    completion = client.chat.completions.create(model="default", messages=[{"role": "user", "content": QUESTION}])
    # Then the answer is the agent's, after its tool calls, with the run's token usage
    choice = completion.choices[0]
    assert completion.object == "chat.completion"
    assert (choice.message.role, choice.finish_reason) == ("assistant", "stop")
    assert "Paris" in (choice.message.content or "") and "USD" in (choice.message.content or "")
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_a_streamed_chat_completion_sends_the_same_answer_in_chunks_then_done(client: OpenAI) -> None:
    # Given the plain answer to the question
    plain = client.chat.completions.create(model="default", messages=[{"role": "user", "content": QUESTION}])
    # When the same question is streamed, with the usage asked for
    stream = client.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    # Then the chunks put together are the same answer, the last choice says why it ended, usage comes last
    pieces = [chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices]
    assert len(pieces) > 2
    assert "".join(pieces) == plain.choices[0].message.content
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_a_bad_request_is_an_sdk_error_with_the_reason(client: OpenAI) -> None:
    # When the SDK sends a conversation that does not end with a question
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="default", messages=[{"role": "assistant", "content": "Hello"}])
    # Then the SDK raises with the API's error body
    assert refused.value.status_code == 422
    assert "role user" in str(refused.value)


def test_a_refused_field_is_where_the_sdk_looks_for_it(client: OpenAI) -> None:
    # When the SDK sends a temperature the API refuses
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "Hi"}], temperature=7.5)
    # Then the SDK's error names the field in `param` and the error's type in `code`
    assert (refused.value.param, refused.value.code) == ("temperature", "invalid_request")
