"""The providers keep reasoning apart from the reply, count its tokens, and send it back only where required.

OpenAI-compatible replies come from a loopback server; Bedrock ones through a real boto3 client stubbed by
Stubber, which checks requests and responses against botocore's `bedrock-runtime` service model.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.llm import BedrockModelConfig, OpenAIModelConfig
from stepwise.llm.bedrock import BedrockConverseChatModel
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.models.messages import (
    ChatMessage,
    ChatRequest,
    ReasoningBlock,
    ReasoningRequest,
    ToolCall,
    ToolSpec,
)
from tests.support.openai_server import FakeOpenAIServer, chat_completion

WEATHER = ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = b"\x01encrypted-thinking\x02"


def openai_model(server: FakeOpenAIServer) -> OpenAICompatibleChatModel:
    config = OpenAIModelConfig(
        provider="openai", base_url=server.base_url, model="deepseek-v4-pro", api_key="sk-test-key"
    )
    return OpenAICompatibleChatModel(config)


def tool_turn(reasoning: list[ReasoningBlock]) -> list[ChatMessage]:
    """A question, the model's tool call with its reasoning, and the tool's result."""
    return [
        ChatMessage(role="user", content="Weather in Paris?"),
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})],
            reasoning=reasoning,
        ),
        ChatMessage(role="tool", tool_call_id="call_1", content="14C, rain"),
    ]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_an_openai_compatible_reply_keeps_its_reasoning_field_apart_and_counts_its_tokens(
    openai_server: FakeOpenAIServer, field: str
) -> None:
    # Given a reply with its reasoning in a field beside the content, and reasoning tokens in its usage
    body = chat_completion(content="14 degrees.", usage=(20, 50))
    body["choices"][0]["message"][field] = "The user wants Paris. Action: search"
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 38}
    openai_server.enqueue(body=body)
    # When the model is called
    completion = openai_model(openai_server).complete(ChatRequest(messages=[ChatMessage(role="user", content="?")]))
    # Then the content is the reply, the reasoning is kept apart, and its tokens are counted within the output
    assert completion.content == "14 degrees."
    assert completion.reasoning == [ReasoningBlock(text="The user wants Paris. Action: search")]
    assert (completion.usage.output_tokens, completion.usage.reasoning_tokens) == (50, 38)


def test_reasoning_tokens_a_server_counts_apart_from_the_completion_are_added_to_the_output(
    openai_server: FakeOpenAIServer,
) -> None:
    # Given a server whose total shows the reasoning tokens were not in completion_tokens
    body = chat_completion(content="ok", usage=(10, 5))
    body["usage"] |= {"total_tokens": 10 + 5 + 30, "completion_tokens_details": {"reasoning_tokens": 30}}
    openai_server.enqueue(body=body)
    # When the model is called
    completion = openai_model(openai_server).complete(ChatRequest(messages=[ChatMessage(role="user", content="?")]))
    # Then the output counts them
    assert (completion.usage.output_tokens, completion.usage.reasoning_tokens) == (35, 30)


@pytest.mark.parametrize(("pass_back", "sent"), [("reasoning_content", True), ("none", False)])
def test_reasoning_goes_back_on_a_tool_call_turn_only_where_the_model_requires_it(
    openai_server: FakeOpenAIServer, pass_back: Any, sent: bool
) -> None:
    # Given a conversation whose tool-call turn carries reasoning, and an earlier answer with reasoning too
    messages = [
        ChatMessage(role="user", content="Hi"),
        ChatMessage(role="assistant", content="Hello.", reasoning=[ReasoningBlock(text="Greet back.")]),
        *tool_turn([ReasoningBlock(text="Call the weather tool.")]),
    ]
    # When the request goes to a model that wants it back (DeepSeek), or to one that does not
    openai_model(openai_server).complete(ChatRequest(messages=messages, tools=[WEATHER], reasoning_pass_back=pass_back))
    wire = openai_server.requests[0].body["messages"]
    # Then only the tool-call turn carries it, and only for the model that requires it
    assert "reasoning_content" not in wire[1]
    assert wire[3].get("reasoning_content") == ("Call the weather tool." if sent else None)


def test_an_openai_request_sends_reasoning_effort(openai_server: FakeOpenAIServer) -> None:
    # Given a request for thinking from a model that takes an effort
    request = ChatRequest(
        messages=[ChatMessage(role="user", content="?")],
        reasoning=ReasoningRequest(control="openai_effort", effort="high"),
    )
    # When it is sent
    openai_model(openai_server).complete(request)
    # Then the effort is in the body
    assert openai_server.requests[0].body["reasoning_effort"] == "high"


BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING = ReasoningRequest(control="anthropic_budget", budget_tokens=2048, drop_sampling=["temperature"])


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockConverseChatModel, Stubber]]:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    config = BedrockModelConfig(provider="bedrock", model_id=BEDROCK_MODEL, max_tokens=6000, temperature=0.5)
    with Stubber(client) as stubber:
        yield BedrockConverseChatModel(config, client=client), stubber
        stubber.assert_no_pending_responses()


def converse_reply(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 100, "outputTokens": 80, "totalTokens": 180},
        "metrics": {"latencyMs": 900},
    }


def test_a_converse_reply_keeps_signed_and_redacted_reasoning_apart(
    bedrock: tuple[BedrockConverseChatModel, Stubber],
) -> None:
    # Given a Claude reply with a signed thinking block, a redacted one, text and a tool use
    model, stubber = bedrock
    reply = converse_reply(
        [
            {"reasoningContent": {"reasoningText": {"text": "Paris needs the tool.", "signature": SIGNATURE}}},
            {"reasoningContent": {"redactedContent": REDACTED}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
        ]
    )
    stubber.add_response("converse", reply)
    # When the model is called
    completion = model.complete(ChatRequest(messages=[ChatMessage(role="user", content="?")], tools=[WEATHER]))
    # Then the text is the reply and both reasoning blocks are kept as sent
    assert completion.content == "Checking."
    assert completion.reasoning == [
        ReasoningBlock(text="Paris needs the tool.", signature=SIGNATURE),
        ReasoningBlock(redacted=base64.b64encode(REDACTED).decode()),
    ]


def test_a_thinking_request_sends_the_signed_blocks_first_on_the_tool_use_turn(
    bedrock: tuple[BedrockConverseChatModel, Stubber],
) -> None:
    # Given thinking on, and a tool-use turn carrying a signed block, a redacted one and unsigned reasoning
    model, stubber = bedrock
    reasoning = [
        ReasoningBlock(text="Paris needs the tool.", signature=SIGNATURE),
        ReasoningBlock(redacted=base64.b64encode(REDACTED).decode()),
        ReasoningBlock(text="read from a think tag: never sent"),
    ]
    request = ChatRequest(messages=tool_turn(reasoning), tools=[WEATHER], reasoning=THINKING, max_tokens=6144)
    expected_assistant = {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Paris needs the tool.", "signature": SIGNATURE}}},
            {"reasoningContent": {"redactedContent": REDACTED}},
            {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
        ],
    }
    expected = {
        "modelId": BEDROCK_MODEL,
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            expected_assistant,
            {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "14C, rain"}]}}]},
        ],
        "inferenceConfig": {"maxTokens": 6144},
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER.parameters}}}]},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    }
    stubber.add_response("converse", converse_reply([{"text": "14 degrees."}]), expected)
    # When it is sent, then Stubber sees the blocks back, first and unchanged, and no temperature
    model.complete(request)


def test_a_signed_block_goes_back_on_the_tool_use_turn_though_no_thinking_was_asked(
    bedrock: tuple[BedrockConverseChatModel, Stubber],
) -> None:
    # Given a tool-use turn carrying a signed block (a model that thinks by default signs one unasked) and
    # unsigned reasoning, and a request that does not ask for thinking
    model, stubber = bedrock
    reasoning = [ReasoningBlock(text="x", signature=SIGNATURE), ReasoningBlock(text="from a think tag")]
    request = ChatRequest(messages=tool_turn(reasoning), tools=[WEATHER])
    expected = {
        "modelId": BEDROCK_MODEL,
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "x", "signature": SIGNATURE}}},
                    {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
                ],
            },
            {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "14C, rain"}]}}]},
        ],
        "inferenceConfig": {"maxTokens": 6000, "temperature": 0.5},
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER.parameters}}}]},
    }
    stubber.add_response("converse", converse_reply([{"text": "14 degrees."}]), expected)
    # When it is sent, then Stubber sees the signed block back, first, and the unsigned reasoning nowhere
    model.complete(request)


def test_a_template_that_reads_thinking_from_the_content_gets_it_back_there(openai_server: FakeOpenAIServer) -> None:
    # Given a model whose catalog entry wants its reasoning back between think tags, and a tool-call turn
    request = ChatRequest(messages=tool_turn([ReasoningBlock(text="Weather tool.")]), reasoning_pass_back="think_tags")
    # When the request is sent
    openai_model(openai_server).complete(request)
    # Then that turn's content carries the reasoning in the tags
    assert openai_server.requests[0].body["messages"][1]["content"] == "<think>\nWeather tool.\n</think>\n\n"
