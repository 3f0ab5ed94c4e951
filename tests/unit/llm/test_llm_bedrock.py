"""BedrockConverseChatModel on a real boto3 bedrock-runtime client, stubbed at the wire by Stubber."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from stepwise.config.llm import BedrockModelConfig
from stepwise.config.model_catalog import packaged_catalog
from stepwise.errors import LLMPermanentError, LLMTransientError
from stepwise.llm.bedrock import BedrockConverseChatModel
from stepwise.models.messages import ChatMessage, ChatRequest, ImageInput, ToolCall, ToolSpec

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
WEATHER_TOOL = ToolSpec(
    name="get_weather",
    description="Current weather of a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONFIG = BedrockModelConfig(provider="bedrock", model_id=MODEL_ID, region="us-east-1", max_tokens=512)


@pytest.fixture
def client() -> Any:
    """A real bedrock-runtime client; Stubber answers before anything is signed or sent."""
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    """The client's Stubber, checked to have served every queued response."""
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def converse_response(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": {"inputTokens": 40, "outputTokens": 9, "totalTokens": 49},
        "metrics": {"latencyMs": 321},
    }


def tool_conversation() -> list[ChatMessage]:
    """A conversation where the assistant called two tools in parallel and both answered."""
    return [
        ChatMessage(role="system", content="You are terse."),
        ChatMessage(role="user", content="Weather and time in Paris?"),
        ChatMessage(
            role="assistant",
            content="Let me check.",
            tool_calls=[
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="call_2", name="get_time", arguments={}),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="call_1", content="21C, sunny"),
        ChatMessage(role="tool", tool_call_id="call_2", content=""),
    ]


def test_sends_tools_tool_results_and_merged_roles(client: Any, stubber: Stubber) -> None:
    # Given a conversation with parallel tool calls and the tools still offered, any tool required
    request = ChatRequest(
        messages=tool_conversation(), tools=[WEATHER_TOOL], tool_choice="required", stop=["Observation:"]
    )
    expected = {
        "modelId": MODEL_ID,
        "system": [{"text": "You are terse."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather and time in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me check."},
                    {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
                    {"toolUse": {"toolUseId": "call_2", "name": "get_time", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "call_1", "content": [{"text": "21C, sunny"}]}},
                    {"toolResult": {"toolUseId": "call_2", "content": [{"text": "(no output)"}]}},
                ],
            },
        ],
        "inferenceConfig": {"maxTokens": 512, "stopSequences": ["Observation:"]},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather of a city",
                        "inputSchema": {"json": WEATHER_TOOL.parameters},
                    }
                }
            ],
            "toolChoice": {"any": {}},
        },
    }
    stubber.add_response("converse", converse_response([{"text": "Sunny, 14:05."}]), expected)
    # When it is sent, then Stubber sees exactly the expected Converse parameters
    BedrockConverseChatModel(CONFIG, client=client).complete(request)


def test_a_named_tool_choice_forces_that_tool(client: Any, stubber: Stubber) -> None:
    # Given a request forcing one tool
    request = ChatRequest(
        messages=[ChatMessage(role="user", content="Paris?")], tools=[WEATHER_TOOL], tool_choice="get_weather"
    )
    expected = {
        "modelId": MODEL_ID,
        "messages": [{"role": "user", "content": [{"text": "Paris?"}]}],
        "inferenceConfig": {"maxTokens": 512},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather of a city",
                        "inputSchema": {"json": WEATHER_TOOL.parameters},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": "get_weather"}},
        },
    }
    stubber.add_response("converse", converse_response([{"text": "ok"}]), expected)
    # When it is sent, then toolChoice names the tool
    BedrockConverseChatModel(CONFIG, client=client).complete(request)


def test_without_tools_earlier_tool_turns_are_sent_as_text(client: Any, stubber: Stubber) -> None:
    # Given the final round: the same tool conversation, but no tools offered
    request = ChatRequest(messages=tool_conversation())
    expected = {
        "modelId": MODEL_ID,
        "system": [{"text": "You are terse."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather and time in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me check."},
                    {"text": 'Called tool get_weather (call call_1) with {"city": "Paris"}'},
                    {"text": "Called tool get_time (call call_2) with {}"},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"text": "Result of tool call call_1:\n21C, sunny"},
                    {"text": "Result of tool call call_2:\n(no output)"},
                ],
            },
        ],
        "inferenceConfig": {"maxTokens": 512},
    }
    stubber.add_response("converse", converse_response([{"text": "Sunny."}]), expected)
    # When it is sent, then there is no toolConfig and no tool block Converse would refuse
    BedrockConverseChatModel(CONFIG, client=client).complete(request)


def test_reads_text_tool_uses_usage_and_stop_reason(client: Any, stubber: Stubber) -> None:
    # Given Bedrock answers with text and two tool uses
    stubber.add_response(
        "converse",
        converse_response(
            [
                {"text": "Checking both."},
                {"toolUse": {"toolUseId": "tooluse_a", "name": "get_weather", "input": {"city": "Paris"}}},
                {"toolUse": {"toolUseId": "tooluse_b", "name": "get_time", "input": {}}},
            ],
            stop_reason="tool_use",
        ),
    )
    # When the model is called
    completion = BedrockConverseChatModel(CONFIG, client=client).complete(
        ChatRequest(messages=[ChatMessage(role="user", content="Paris?")], tools=[WEATHER_TOOL])
    )
    # Then text, calls, usage and stop reason are normalised
    assert completion.content == "Checking both."
    assert completion.tool_calls == [
        ToolCall(id="tooluse_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="tooluse_b", name="get_time", arguments={}),
    ]
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (40, 9)
    assert completion.finish_reason == "tool_use"
    assert completion.model == MODEL_ID


def test_cited_text_is_kept_and_a_tool_the_provider_ran_is_recorded_not_called(client: Any, stubber: Stubber) -> None:
    # Given Nova's web grounding reply: its search (a server tool use and its result), then text and cited text
    stubber.add_response(
        "converse",
        converse_response(
            [
                {
                    "toolUse": {
                        "toolUseId": "tooluse_g",
                        "name": "nova_grounding",
                        "type": "server_tool_use",
                        "input": {"query": "Nova 2 Lite"},
                    }
                },
                {"toolResult": {"toolUseId": "tooluse_g", "type": "nova_grounding_result", "content": [{"text": "…"}]}},
                {"text": "It became available on "},
                {"citationsContent": {"content": [{"text": "December 2, 2025"}], "citations": [{"title": "card"}]}},
                {"text": "."},
            ]
        ),
    )
    # When the model is called
    completion = BedrockConverseChatModel(CONFIG, client=client).complete(
        ChatRequest(messages=[ChatMessage(role="user", content="When?")], tools=[WEATHER_TOOL])
    )
    # Then the cited text is part of the answer, and the search is recorded, not returned as a call to make
    assert completion.content == "It became available on December 2, 2025."
    assert (completion.tool_calls, completion.server_tools) == ([], ["nova_grounding"])


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ServiceUnavailableException", 503),
        ("InternalServerException", 500),
        ("ModelNotReadyException", 429),
        ("ModelTimeoutException", 408),
    ],
)
def test_throttling_and_service_failures_are_transient(client: Any, stubber: Stubber, code: str, status: int) -> None:
    # Given Bedrock fails in a way a retry may fix
    stubber.add_client_error("converse", service_error_code=code, service_message="slow down", http_status_code=status)
    # When the model is called, then the error is transient and names the code
    with pytest.raises(LLMTransientError, match=rf"{MODEL_ID}: HTTP {status} {code}: slow down"):
        BedrockConverseChatModel(CONFIG, client=client).complete(
            ChatRequest(messages=[ChatMessage(role="user", content="hi")])
        )


@pytest.mark.parametrize(
    ("code", "status"),
    [("ValidationException", 400), ("AccessDeniedException", 403), ("ResourceNotFoundException", 404)],
)
def test_rejected_requests_are_permanent(client: Any, stubber: Stubber, code: str, status: int) -> None:
    # Given Bedrock rejects the request
    stubber.add_client_error(
        "converse", service_error_code=code, service_message="The model is not valid", http_status_code=status
    )
    # When the model is called, then the error is permanent and quotes Bedrock
    with pytest.raises(LLMPermanentError, match=rf"HTTP {status} {code}: The model is not valid"):
        BedrockConverseChatModel(CONFIG, client=client).complete(
            ChatRequest(messages=[ChatMessage(role="user", content="hi")])
        )


def test_a_read_timeout_is_transient() -> None:
    # Given an endpoint on 127.0.0.1 that accepts connections but never answers
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(read_timeout=0.2, connect_timeout=0.2, retries={"total_max_attempts": 1}),
        )
        # When the model is called, then the read timeout is transient
        with pytest.raises(LLMTransientError, match=r"Bedrock unreachable \(ReadTimeoutError\)"):
            BedrockConverseChatModel(CONFIG, client=client).complete(
                ChatRequest(messages=[ChatMessage(role="user", content="hi")])
            )


# A 1x1 PNG, as a client sends it in a data: URL
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_an_image_of_a_user_message_is_a_converse_image_block_of_its_bytes(client: Any, stubber: Stubber) -> None:
    # Given a user message with its text and a PNG image
    image = ImageInput(media_type="image/png", data=PIXEL_PNG)
    request = ChatRequest(messages=[ChatMessage(role="user", content="What is this?", images=[image])])
    expected = {
        "modelId": MODEL_ID,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "What is this?"},
                    {"image": {"format": "png", "source": {"bytes": base64.b64decode(PIXEL_PNG)}}},
                ],
            }
        ],
        "inferenceConfig": {"maxTokens": 512},
    }
    stubber.add_response("converse", converse_response([{"text": "A pixel."}]), expected)
    # When it is sent, then Converse gets the text block and an image block holding the PNG's bytes
    assert BedrockConverseChatModel(CONFIG, client=client).complete(request).content == "A pixel."


def test_a_models_own_temperature_is_not_sent_to_a_model_that_refuses_it(client: Any, stubber: Stubber) -> None:
    # Given Claude Haiku 5.5 (which refuses sampling fields, per the catalog) configured with a temperature
    model_id = "global.anthropic.claude-haiku-5-5"
    config = BedrockModelConfig(provider="bedrock", model_id=model_id, max_tokens=512, temperature=0.7)
    facts = packaged_catalog().lookup(model_id)
    expected = {
        "modelId": model_id,
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "inferenceConfig": {"maxTokens": 512},
    }
    stubber.add_response("converse", converse_response([{"text": "Hello."}]), expected)
    # When a request that sets no temperature is sent, then Stubber sees none
    BedrockConverseChatModel(config, client=client, facts=facts).complete(
        ChatRequest(messages=[ChatMessage(role="user", content="Hi")])
    )
