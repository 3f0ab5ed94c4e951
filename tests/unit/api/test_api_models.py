"""The request models: what a run or chat completion request must hold, and what it may not."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from stepwise.models.api_requests import InputMessage, RunRequest
from stepwise.models.chat_api import ChatCompletionRequest


def problems(model: type[RunRequest] | type[ChatCompletionRequest], body: dict[str, Any]) -> set[str]:
    """The fields a body is refused for ("" for the body as a whole)."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate(body)
    return {".".join(str(part) for part in error["loc"]) for error in refused.value.errors()}


def test_a_run_request_takes_the_question_as_input_or_as_messages() -> None:
    # When a request gives its question either way
    by_input = RunRequest.model_validate({"input": "hi"})
    by_messages = RunRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
    # Then both are accepted
    assert (by_input.input, by_messages.messages is not None) == ("hi", True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "", id="neither"),
        pytest.param({"input": "a", "messages": [{"role": "user", "content": "b"}]}, "", id="both"),
        pytest.param({"input": " \n"}, "input", id="blank input"),
        pytest.param({"messages": []}, "messages", id="no messages"),
        pytest.param({"messages": [{"role": "assistant", "content": "hi"}]}, "messages", id="no question last"),
        pytest.param({"messages": [{"role": "tool", "content": "x"}]}, "messages.0", id="tool without call id"),
        pytest.param({"input": "hi", "metadata": {f"k{n}": "v" for n in range(17)}}, "metadata", id="metadata"),
        pytest.param({"input": "hi", "session_id": "has space"}, "session_id", id="session id"),
        pytest.param({"input": "hi", "max_iterations": 3}, "max_iterations", id="unknown field"),
    ],
)
def test_a_run_request_is_refused_naming_the_field_at_fault(body: dict[str, Any], field: str) -> None:
    # When the body is validated, then the field at fault is named
    assert field in problems(RunRequest, body)


def test_content_given_as_text_parts_is_read_as_their_joined_text() -> None:
    # Given a message whose content is a list of text parts, as OpenAI clients may send
    message = InputMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    )
    # Then its text is the parts joined
    assert message.text == "one\ntwo"


def test_a_chat_completion_request_accepts_the_openai_sampling_fields() -> None:
    # When a request carries the fields OpenAI clients commonly send
    request = ChatCompletionRequest.model_validate(
        {
            "model": "gpt-4o",
            "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "temperature": 0.2,
            "max_tokens": 100,
            "stream": True,
            "stream_options": {"include_usage": True},
            "user": "u-1",
        }
    )
    # Then it is accepted
    assert (request.stream, request.stream_options is not None and request.stream_options.include_usage) == (
        True,
        True,
    )


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param({"n": 2}, "n", id="several choices"),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "has space"}}]},
            "tools.0.function.name",
            id="client tool name",
        ),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "find_tools"}}]},
            "tools",
            id="client tool named as the tool search",
        ),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "get"}}] * 2},
            "tools",
            id="two client tools of one name",
        ),
        pytest.param({"stop": ["a", "b", "c", "d", "e"]}, "stop", id="more than four stops"),
        pytest.param({"response_format": {"type": "xml"}}, "response_format", id="unknown response format"),
        pytest.param({"logit_bias": {"50256": 200}}, "logit_bias", id="bias out of range"),
        pytest.param({"temperature": 5}, "temperature", id="temperature out of range"),
    ],
)
def test_a_chat_completion_request_refuses_what_the_agent_cannot_honour(extra: dict[str, Any], field: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]} | extra
    # When the body is validated, then the field is named
    assert field in problems(ChatCompletionRequest, body)


# One value for each field of OpenAI's own request, as a newer client sends it.
EVERY_OPENAI_FIELD: dict[str, Any] = {
    "messages": [{"role": "user", "content": "hi"}],
    "model": "gpt-5",
    "audio": {"voice": "alloy", "format": "mp3"},
    "frequency_penalty": 0.1,
    "function_call": "auto",
    "functions": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
    "logit_bias": {"50256": -100},
    "logprobs": False,
    "max_completion_tokens": 50,
    "max_tokens": 50,
    "metadata": {"team": "docs"},
    "modalities": ["text"],
    "moderation": {"model": "omni-moderation-latest", "policy": {"input": {"mode": "score"}}},
    "n": 1,
    "parallel_tool_calls": True,
    "prediction": {"type": "content", "content": "draft"},
    "presence_penalty": 0.2,
    "prompt_cache_key": "user-1",
    "prompt_cache_options": {"mode": "implicit", "ttl": "30m"},
    "prompt_cache_retention": "24h",
    "reasoning_effort": "xhigh",
    "response_format": {"type": "text"},
    "safety_identifier": "hash-1",
    "seed": 7,
    "service_tier": "flex",
    "stop": ["END"],
    "store": False,
    "stream": False,
    "stream_options": {"include_usage": True},
    "temperature": 0.3,
    "tool_choice": "auto",
    "tools": [{"type": "function", "function": {"name": "get_time"}}],
    "top_logprobs": 2,
    "top_p": 0.9,
    "user": "user-1",
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
}


def test_every_field_of_the_openai_sdks_request_is_accepted() -> None:
    # Given a value for each field the openai SDK's CompletionCreateParams has (a field it gains fails here)
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    assert set(EVERY_OPENAI_FIELD) == set(CompletionCreateParamsNonStreaming.__annotations__)
    # When a body holds each of them (the legacy functions and the tools are exclusive, so one at a time)
    legacy = {key: value for key, value in EVERY_OPENAI_FIELD.items() if key not in ("tools", "tool_choice")}
    current = {key: value for key, value in EVERY_OPENAI_FIELD.items() if key not in ("functions", "function_call")}
    # Then both bodies are accepted, and those OpenAI features that mean nothing for a run are named as ignored
    ChatCompletionRequest.model_validate(legacy)
    request = ChatCompletionRequest.model_validate(current)
    assert request.ignored_fields == [
        "user",
        "store",
        "logprobs",
        "top_logprobs",
        "service_tier",
        "modalities",
        "audio",
        "prediction",
        "web_search_options",
        "moderation",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "safety_identifier",
        "verbosity",
    ]


def test_a_request_of_only_the_usual_fields_ignores_nothing() -> None:
    # When a request sets only what Stepwise uses
    request = ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    # Then no field is named as ignored
    assert request.ignored_fields == []


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param({"servce_tier": "flex"}, "servce_tier", id="a misspelt field"),
        pytest.param({"modalities": ["text", "audio"]}, "modalities", id="audio output"),
        pytest.param(
            {"functions": [{"name": "a"}], "tools": [{"type": "function", "function": {"name": "b"}}]},
            "",
            id="functions beside tools",
        ),
        pytest.param({"function_call": "auto"}, "", id="function_call without functions"),
        pytest.param({"functions": [{"name": "a"}] * 2}, "functions", id="two functions of one name"),
    ],
)
def test_a_chat_completion_request_still_refuses_what_openai_would_not_take(extra: dict[str, Any], field: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]} | extra
    # When the body is validated, then the field is named ("" for the body as a whole)
    assert field in problems(ChatCompletionRequest, body)


def test_a_legacy_function_call_and_its_result_are_read_as_a_tool_call_and_its_result() -> None:
    # Given a conversation in the legacy shape: the assistant's function_call, then the function's result
    request = ChatCompletionRequest.model_validate(
        {
            "model": "m",
            "functions": [{"name": "get_weather"}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": "{}"}},
                {"role": "function", "name": "get_weather", "content": "18 C"},
            ],
        }
    )
    # Then the call is a tool call, and the result answers it by its id
    _, call, result = request.messages
    assert call.tool_calls is not None and call.tool_calls[0].function.name == "get_weather"
    assert (result.role, result.tool_call_id, result.text) == ("tool", call.tool_calls[0].id, "18 C")


def test_a_function_result_no_call_asked_for_is_refused() -> None:
    # Given a function message with no function_call before it
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}, {"role": "function", "name": "get_weather", "content": "x"}],
    }
    # When it is validated, then the messages are refused
    assert "messages" in problems(ChatCompletionRequest, body)


def test_every_field_of_the_sdks_stream_options_is_accepted() -> None:
    # Given a value for each field the openai SDK's stream options have (a field it gains fails here)
    from openai.types.chat import ChatCompletionStreamOptionsParam

    options = {"include_usage": True, "include_obfuscation": False}
    assert set(options) == set(ChatCompletionStreamOptionsParam.__annotations__)
    # When a streamed request sets them, then it is accepted with the usage asked for
    body = {"model": "m", "stream": True, "stream_options": options, "messages": [{"role": "user", "content": "hi"}]}
    request = ChatCompletionRequest.model_validate(body)
    assert request.stream_options is not None and request.stream_options.include_usage


def test_an_assistant_message_with_every_field_of_the_sdks_is_accepted_and_its_refusal_is_its_text() -> None:
    # Given an assistant message holding each field of the SDK's assistant message (a field it gains fails here),
    # as an OpenAI answer appended to the conversation holds them, with its refusal in a content part too
    from openai.types.chat import ChatCompletionAssistantMessageParam

    assistant = {
        "role": "assistant",
        "audio": {"id": "audio_1"},
        "content": [{"type": "text", "text": "Paris:"}, {"type": "refusal", "refusal": "I cannot say."}],
        "function_call": None,
        "name": "helper",
        "refusal": "I cannot say.",
        "tool_calls": None,
    }
    assert set(assistant) == set(ChatCompletionAssistantMessageParam.__annotations__)
    # and one as Stepwise answers (`reasoning_content`) with OpenAI's `annotations`, its content null and refused
    refused: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "refusal": "No.",
        "annotations": [],
        "reasoning_content": None,
    }
    messages = [{"role": "user", "content": "hi"}, assistant, refused, {"role": "user", "content": "?"}]
    body = {"model": "m", "messages": messages}
    # When the conversation is validated
    request = ChatCompletionRequest.model_validate(body)
    # Then both are taken, each read as what the assistant said
    assert [message.text for message in request.messages[1:3]] == ["Paris:\nI cannot say.", "No."]


def test_a_refusal_is_refused_outside_an_assistant_message() -> None:
    # Given a user message carrying a refusal, then the message is refused
    body = {"model": "m", "messages": [{"role": "user", "content": "hi", "refusal": "no"}]}
    assert "messages.0" in problems(ChatCompletionRequest, body)


def test_null_is_accepted_for_every_field_the_sdk_types_as_optional() -> None:
    # Given each field the openai SDK types Optional (it sends an explicit None as null; a field it gains is here)
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    annotations = CompletionCreateParamsNonStreaming.__annotations__
    nullable = [name for name, hint in annotations.items() if "Optional[" in str(hint)]
    assert {"n", "stream", "metadata", "temperature"} <= set(nullable)
    # When a request sets every one of them to null
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]} | dict.fromkeys(nullable)
    request = ChatCompletionRequest.model_validate(body)
    # Then it is accepted as if they were left out: one choice, not streamed, no metadata
    assert (request.n, request.stream, request.metadata) == (1, False, {})


def test_metadata_is_taken_up_to_openais_limits() -> None:
    # Given chat completions whose metadata is as OpenAI takes it (any key of 64 characters, a value of 512)
    def body(key: str, value: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "user", "content": "hi"}], "metadata": {key: value}}

    for key in ("user id", "app/version", "k" * 64):
        assert ChatCompletionRequest.model_validate(body(key, "v" * 512)).metadata == {key: "v" * 512}
    # When a value or a key is a character longer, then it is refused naming the pair
    assert "metadata.trace" in problems(ChatCompletionRequest, body("trace", "v" * 513))
    assert any(field.startswith("metadata.") for field in problems(ChatCompletionRequest, body("k" * 65, "v")))
