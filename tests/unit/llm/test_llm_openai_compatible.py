"""OpenAICompatibleChatModel against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

import pytest

from stepwise.config.llm import ModelCapabilities, OpenAIModelConfig
from stepwise.errors import ContextWindowExceeded, LLMPermanentError, LLMTransientError
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.models.messages import ChatMessage, ChatRequest, ImageInput, ToolCall, ToolSpec
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.ports import refused_port

API_KEY = "sk-test-0123456789abcdef"
PROMPT = "What is the weather in Paris today?"
WEATHER_TOOL = ToolSpec(
    name="get_weather",
    description="Current weather of a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@contextmanager
def openai_model(
    base_url: str, *, timeout_seconds: float = 5.0, **overrides: Any
) -> Iterator[OpenAICompatibleChatModel]:
    """A model with an API key and the given config overrides, closed on exit."""
    config = OpenAIModelConfig(
        provider="openai",
        base_url=base_url,
        model="gpt-test",
        api_key=API_KEY,
        timeout_seconds=timeout_seconds,
        **overrides,
    )
    model = OpenAICompatibleChatModel(config)
    try:
        yield model
    finally:
        model.close()


@pytest.fixture
def model(openai_server: FakeOpenAIServer) -> Iterator[OpenAICompatibleChatModel]:
    """A model with an API key, pointed at the fake server."""
    with openai_model(openai_server.base_url) as model:
        yield model


def question(text: str = PROMPT) -> ChatRequest:
    return ChatRequest(messages=[ChatMessage(role="user", content=text)])


def sent_body(server: FakeOpenAIServer) -> dict[str, Any]:
    (request,) = server.requests
    body: dict[str, Any] = request.body
    return body


# --- the request ---------------------------------------------------------------------------------


def test_sends_the_conversation_in_openai_shape(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a conversation where the assistant called a tool and the tool answered
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    request = ChatRequest(
        messages=[
            ChatMessage(role="system", content="Be brief."),
            ChatMessage(role="user", content=PROMPT),
            ChatMessage(role="assistant", content="", tool_calls=[call]),
            ChatMessage(role="tool", tool_call_id="call_1", content='{"temp_c": 21}'),
        ]
    )
    # When it is sent
    model.complete(request)
    # Then tool calls carry JSON-string arguments and the tool result refers to its call
    assert sent_body(openai_server)["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
    ]


def test_images_of_a_user_message_are_image_url_parts_after_its_text(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a user message with a PNG given as bytes and a picture given by its https URL
    images = [
        ImageInput(media_type="image/png", data="iVBORw0KGgo=", detail="low"),
        ImageInput(url="https://example.com/cat.jpg"),
    ]
    request = ChatRequest(messages=[ChatMessage(role="user", content="Which is the cat?", images=images)])
    # When it is sent
    model.complete(request)
    # Then its content is OpenAI's list of parts: the text, then each image as an image_url part
    assert sent_body(openai_server)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Which is the cat?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            ],
        }
    ]


def test_offers_tools_with_a_named_tool_choice(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a request that offers one tool and forces it
    request = ChatRequest(
        messages=question().messages, tools=[WEATHER_TOOL], tool_choice="get_weather", parallel_tool_calls=False
    )
    # When it is sent
    model.complete(request)
    # Then the tool, the forced choice and the parallel flag are in OpenAI's shape
    body = sent_body(openai_server)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather of a city",
                "parameters": WEATHER_TOOL.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False


def test_passes_keyword_tool_choice_through(openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel) -> None:
    # Given a request that requires some tool call
    request = ChatRequest(messages=question().messages, tools=[WEATHER_TOOL], tool_choice="required")
    # When it is sent
    model.complete(request)
    # Then tool_choice is the keyword itself
    assert sent_body(openai_server)["tool_choice"] == "required"


def test_leaves_tool_fields_out_when_no_tools_are_offered(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a request without tools (OpenAI rejects tool_choice without tools)
    request = ChatRequest(messages=question().messages, tool_choice="auto", parallel_tool_calls=True)
    # When it is sent
    model.complete(request)
    # Then no tool field is sent
    assert {"tools", "tool_choice", "parallel_tool_calls"}.isdisjoint(sent_body(openai_server))


def test_sends_stop_sequences_when_the_model_supports_them(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a request with a stop sequence
    request = ChatRequest(messages=question().messages, stop=["Observation:"])
    # When it is sent
    model.complete(request)
    # Then the stop sequence is sent
    assert sent_body(openai_server)["stop"] == ["Observation:"]


def test_omits_stop_sequences_when_the_model_does_not_support_them(openai_server: FakeOpenAIServer) -> None:
    # Given a model configured without stop sequence support
    with openai_model(openai_server.base_url, capabilities=ModelCapabilities(stop_sequences=False)) as model:
        # When a request with a stop sequence is sent
        model.complete(ChatRequest(messages=question().messages, stop=["Observation:"]))
    # Then no stop field is sent
    assert "stop" not in sent_body(openai_server)


def test_uses_config_limits_unless_the_request_sets_its_own(openai_server: FakeOpenAIServer) -> None:
    # Given a model configured with max_tokens and temperature
    with openai_model(openai_server.base_url, max_tokens=256, temperature=0.2) as model:
        # When one request relies on the config and one sets its own max_tokens
        model.complete(question())
        model.complete(ChatRequest(messages=question().messages, max_tokens=32))
    # Then the config fills in what the request leaves unset
    first, second = (request.body for request in openai_server.requests)
    assert (first["max_tokens"], first["temperature"]) == (256, 0.2)
    assert (second["max_tokens"], second["temperature"]) == (32, 0.2)


def test_sends_the_bearer_key_and_configured_headers(openai_server: FakeOpenAIServer) -> None:
    # Given a model with an API key and an extra header
    with openai_model(openai_server.base_url, headers={"X-Tenant": "acme"}) as model:
        # When a request is sent
        model.complete(question())
    # Then both headers reach the server
    (request,) = openai_server.requests
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["x-tenant"] == "acme"


def test_sends_no_authorization_without_a_key(openai_server: FakeOpenAIServer) -> None:
    # Given a model without an API key (a local server)
    config = OpenAIModelConfig(provider="openai", base_url=openai_server.base_url, model="local")
    with closing(OpenAICompatibleChatModel(config)) as model:
        # When a request is sent
        model.complete(question())
    # Then no Authorization header is sent
    assert "authorization" not in openai_server.requests[0].headers


def test_asks_for_json_schema_output_when_json_mode_is_supported(openai_server: FakeOpenAIServer) -> None:
    # Given a json-mode model and a request with a response schema
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    with openai_model(openai_server.base_url, capabilities=ModelCapabilities(json_mode=True)) as model:
        # When it is sent
        model.complete(ChatRequest(messages=question().messages, response_schema=schema))
    # Then the schema is sent as response_format
    assert sent_body(openai_server)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": False},
    }


# --- the response --------------------------------------------------------------------------------


def test_reads_content_usage_model_and_finish_reason(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given the server answers with text
    openai_server.enqueue(body=chat_completion(content="It is sunny.", usage=(31, 4), model="gpt-test-0613"))
    # When the model is called
    completion = model.complete(question())
    # Then the completion carries the text, the usage, the model and the finish reason
    assert completion.content == "It is sunny."
    assert completion.tool_calls == []
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (31, 4)
    assert completion.model == "gpt-test-0613"
    assert completion.finish_reason == "stop"


def test_reads_parallel_tool_calls_with_null_content(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given the server answers with two tool calls and no text
    openai_server.enqueue(
        body=chat_completion(
            tool_calls=[
                {"id": "call_a", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "call_b", "name": "get_time", "arguments": {}},
            ]
        )
    )
    # When the model is called
    completion = model.complete(question())
    # Then both calls are decoded and the content is empty text
    assert completion.content == ""
    assert completion.tool_calls == [
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_time", arguments={}),
    ]
    assert completion.finish_reason == "tool_calls"


def test_keeps_undecodable_arguments_raw(openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel) -> None:
    # Given the model wrote arguments that are not JSON
    openai_server.enqueue(body=chat_completion(tool_calls=[{"name": "get_weather", "arguments": "{city: Paris"}]))
    # When the model is called
    completion = model.complete(question())
    # Then the text is kept for the parser to report
    assert completion.tool_calls[0].arguments == {"_raw": "{city: Paris"}


def test_joins_content_given_as_text_parts(openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel) -> None:
    # Given a server that answers with content parts instead of a string
    body = chat_completion()
    body["choices"][0]["message"]["content"] = [{"type": "text", "text": "It is "}, {"type": "text", "text": "sunny."}]
    openai_server.enqueue(body=body)
    # When the model is called
    completion = model.complete(question())
    # Then the parts are joined into one text
    assert completion.content == "It is sunny."


def test_gives_positional_ids_to_tool_calls_without_one(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given a local server that omits tool call ids
    body = chat_completion(tool_calls=[{"name": "get_weather", "arguments": {}}, {"name": "get_time", "arguments": {}}])
    for call in body["choices"][0]["message"]["tool_calls"]:
        del call["id"]
    openai_server.enqueue(body=body)
    # When the model is called
    completion = model.complete(question())
    # Then each call gets an id from its position
    assert [call.id for call in completion.tool_calls] == ["call_0", "call_1"]


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_rate_limits_and_server_errors_are_transient(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel, status: int
) -> None:
    # Given the server fails with a status a retry may fix
    openai_server.enqueue(status=status, body={"error": {"message": "try again later"}})
    # When the model is called, then the error is transient and says what happened
    with pytest.raises(LLMTransientError, match=rf"gpt-test: HTTP {status}: try again later"):
        model.complete(question())


def test_a_rejected_request_is_permanent_with_the_providers_message(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel
) -> None:
    # Given the server rejects the request
    openai_server.enqueue(
        status=400, body={"error": {"message": "Invalid value for 'tool_choice'", "type": "invalid_request_error"}}
    )
    # When the model is called, then the error is permanent and quotes the provider
    with pytest.raises(
        LLMPermanentError, match=r"gpt-test: HTTP 400 invalid_request_error: Invalid value for 'tool_choice'"
    ):
        model.complete(question())


# Error bodies as providers send them: OpenAI (chathub-dev/chathub#126, mckaywrigley/chatbot-ui#102), and
# DeepSeek's OpenAI-compatible API, whose code is not OpenAI's (evalstate/fast-agent#621).
CONTEXT_OVERFLOWS = {
    "openai messages": {
        "error": {
            "message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 "
            "tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "openai completion": {
        "error": {
            "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 "
            "in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "deepseek": {
        "error": {
            "message": "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens "
            "(122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    },
}


@pytest.mark.parametrize("body", CONTEXT_OVERFLOWS.values(), ids=CONTEXT_OVERFLOWS.keys())
def test_a_request_longer_than_the_window_is_a_context_overflow_with_the_providers_count(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel, body: dict[str, Any]
) -> None:
    # Given the server refuses the request as longer than the model's context window
    openai_server.enqueue(status=400, body=body)
    # When the model is called, then the error is a context overflow (permanent), quoting the provider's count
    with pytest.raises(ContextWindowExceeded, match=r"gpt-test: HTTP 400 .*: This model's maximum context length"):
        model.complete(question())


def test_a_slow_response_past_the_timeout_is_transient(openai_server: FakeOpenAIServer) -> None:
    # Given a server slower than the configured timeout
    openai_server.enqueue(body=chat_completion(content="late"), delay_seconds=2.0)
    # When the model is called, then the timeout is a transient error
    with (
        openai_model(openai_server.base_url, timeout_seconds=0.2) as model,
        pytest.raises(LLMTransientError, match=r"no response within 0.2s"),
    ):
        model.complete(question())


def test_an_unreachable_server_is_transient() -> None:
    # Given a loopback port nobody listens on
    # When the model is called, then the connection failure is transient
    with (
        refused_port() as port,
        openai_model(f"http://127.0.0.1:{port}/v1") as model,
        pytest.raises(LLMTransientError, match=r"request failed \(ConnectError\)"),
    ):
        model.complete(question())


@pytest.mark.parametrize(
    "body",
    [
        "<html>Bad gateway</html>",
        {"object": "chat.completion", "model": "gpt-test"},
        {"choices": [{"index": 0, "finish_reason": "stop"}]},
        [{"unexpected": "list"}],
    ],
    ids=["not-json", "no-choices", "no-message", "a-list"],
)
def test_a_200_that_is_not_a_completion_is_transient(
    openai_server: FakeOpenAIServer, model: OpenAICompatibleChatModel, body: Any
) -> None:
    # Given the server answers 200 with something that is not a completion
    openai_server.enqueue(status=200, body=body)
    # When the model is called, then the error is transient
    with pytest.raises(LLMTransientError, match=r"HTTP 200 but not a chat completion"):
        model.complete(question())


@pytest.mark.parametrize(
    ("status", "body", "delay_seconds"),
    [
        (401, {"error": {"message": f"Incorrect API key provided: {API_KEY}."}}, 0.0),
        (429, f"rate limited for key {API_KEY}", 0.0),
        (503, {"detail": f"upstream refused {API_KEY}"}, 0.0),
        (200, {"choices": "nope"}, 0.0),
        (200, chat_completion(content="late"), 2.0),
    ],
    ids=["401-echoing-key", "429-text", "503-detail", "malformed-200", "timeout"],
)
def test_no_error_message_contains_the_api_key_or_the_prompt(
    openai_server: FakeOpenAIServer, status: int, body: Any, delay_seconds: float
) -> None:
    # Given a provider failure, some of them echoing the key
    openai_server.enqueue(status=status, body=body, delay_seconds=delay_seconds)
    # When the model is called
    with (
        openai_model(openai_server.base_url, timeout_seconds=0.2) as model,
        pytest.raises((LLMTransientError, LLMPermanentError)) as caught,
    ):
        model.complete(question())
    # Then neither the key nor the prompt is in the message
    message = str(caught.value)
    assert API_KEY not in message
    assert PROMPT not in message
    assert "gpt-test" in message
