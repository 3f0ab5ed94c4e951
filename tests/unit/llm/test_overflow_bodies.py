"""Servers' whole error bodies for a request past the window, through the OpenAI-compatible client: each is a
context overflow carrying the window the body states, in its message or as a field (recorded bodies in
tests/fixtures/providers/error_bodies.yaml, with their sources)."""

from __future__ import annotations

import pytest

from stepwise.config.llm import OpenAIModelConfig
from stepwise.errors import ContextWindowExceeded
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.models.messages import ChatMessage, ChatRequest
from tests.support.openai_server import FakeOpenAIServer
from tests.support.provider_errors import recorded_error


def refusal(server: FakeOpenAIServer, provider: str, name: str) -> ContextWindowExceeded:
    """The error the client raises when the server answers with the recorded body (window 8192, prompt 9000)."""
    recorded = recorded_error(provider, name, window=8192, tokens=9000, max_tokens=512)
    server.enqueue(status=recorded["status"], body=recorded["body"])
    config = OpenAIModelConfig(provider="openai", base_url=server.base_url, model="m", api_key="sk-x")
    model = OpenAICompatibleChatModel(config)
    try:
        with pytest.raises(ContextWindowExceeded) as caught:
            model.complete(ChatRequest(messages=[ChatMessage(role="user", content="hi")]))
    finally:
        model.close()
    return caught.value


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("llama_cpp", "exceed_context_size"),
        ("llama_cpp", "exceed_context_size_older"),
        ("tgi", "max_total_tokens"),
        ("sglang", "max_total_tokens"),
        ("gemini", "input_token_count"),
    ],
)
def test_a_servers_overflow_body_states_its_window_in_the_error(
    openai_server: FakeOpenAIServer, provider: str, name: str
) -> None:
    # Given a server refusing a request past its 8,192-token window with its own body
    # When the model is called / Then it is a context overflow carrying that window and the prompt's size
    error = refusal(openai_server, provider, name)
    assert (error.window, error.prompt_tokens) == (8192, 9000)


def test_llama_cpps_fields_are_read_when_its_message_states_no_numbers(openai_server: FakeOpenAIServer) -> None:
    # Given llama.cpp's body whose message states no numbers, its window and prompt size as fields, its error
    # code a number (400) and its type the overflow's name
    error = refusal(openai_server, "llama_cpp", "exceed_context_size_older")
    # Then the error names the type, and carries the fields' window and prompt size as such, not as words
    assert "HTTP 400 exceed_context_size_error: the request exceeds the available context size" in str(error)
    assert (error.window, error.prompt_tokens) == (8192, 9000)
    assert "n_ctx" not in str(error)


def test_a_list_body_is_read_as_the_one_error_it_holds(openai_server: FakeOpenAIServer) -> None:
    # Given Gemini's OpenAI-compatible endpoint, whose error body is a list holding one error
    error = refusal(openai_server, "gemini", "input_token_count")
    # Then the error's text is that error's message, not the list's JSON (then what it stated, as data)
    assert str(error) == (
        "model m: HTTP 400: The input token count (9000) exceeds the maximum number of tokens allowed (8192). "
        '[stated: {"window": 8192, "prompt_tokens": 9000}]'
    )
