"""Reasoning models end to end: the real state machine, handlers and store, models served on loopback.

A reply that opens with a think block full of decoys runs to the real reply's result in every protocol; a
Bedrock run with thinking on sends Claude's signed thinking back on the tool-result turn; an OpenAI run asks
for its effort and counts the reasoning tokens.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi, example_tools_config
from stepwise.models.run import RunMeta
from stepwise.models.step_record import StepRecord
from tests.e2e.conftest import ConfigWriter
from tests.support.aws_loopback import AwsLoopback, converse_reply
from tests.support.emf_metrics import emitted, total
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.strict_openai import ProviderRules, strict_openai_server

ANSWER = "It is 14 degrees with light rain in Paris."
# Everything a protocol could mistake for a decision: an action line, a JSON action, an XML tool tag,
# markers and a final answer.
DECOYS = (
    '<think>The user asks about Paris. Maybe:\nAction: convert_currency\nAction Input: {"amount": 1}\n'
    '```json\n{"action": "convert_currency", "action_input": {"amount": 1}}\n```\n'
    "<tool>convert_currency</tool><tool_input>1</tool_input>\n"
    '/*ACTION*/ {"tool": "convert_currency", "parameters": {}} /*END_ACTION*/\n'
    "Final Answer: DECOY ANSWER\n<final_answer>DECOY ANSWER</final_answer>\nNo: the weather tool.</think>\n"
)
PROTOCOL_REPLIES = {
    "react_text": (
        'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}',
        f"Thought: I know it now.\nFinal Answer: {ANSWER}",
    ),
    "react_json": (
        '```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
        '```json\n{"action": "Final Answer", "action_input": "' + ANSWER + '"}\n```',
    ),
    "xml": ('<action>get_weather(city="Paris")</action>', f"<final_answer>{ANSWER}</final_answer>"),
    "markers": (
        '/*ACTION*/ {"tool": "get_weather", "parameters": {"city": "Paris"}} /*END_ACTION*/',
        f"/*FINAL_ANSWER*/ {ANSWER} /*END_FINAL_ANSWER*/",
    ),
}


def openai_model(server: FakeOpenAIServer, model: str = "fake-model", **extra: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": model,
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
        **extra,
    }


def steps_of(environment: LocalEnvironment, meta: RunMeta, kind: str) -> list[StepRecord]:
    return [step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == kind]


def enqueue_decoy_replies(server: FakeOpenAIServer, protocol: str) -> None:
    """A weather call, then the answer, each opening with the decoy think block."""
    if protocol == "function_calling":
        call = {"name": "get_weather", "arguments": {"city": "Paris"}}
        server.enqueue(body=chat_completion(content=DECOYS + "Checking.", tool_calls=[call]))
        server.enqueue(body=chat_completion(content=DECOYS + ANSWER))
        return
    action, answer = PROTOCOL_REPLIES[protocol]
    server.enqueue(body=chat_completion(content=DECOYS + action))
    server.enqueue(body=chat_completion(content=DECOYS + answer))


@pytest.mark.parametrize("protocol", ["function_calling", *PROTOCOL_REPLIES])
def test_replies_opening_with_decoy_reasoning_run_to_the_real_result(
    write_config: ConfigWriter, local_run: Callable[..., Any], protocol: str
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a model served raw whose every reply opens with a think block full of decoy decisions
        enqueue_decoy_replies(server, protocol)
        strategy = {"strategy": "function_calling"} if protocol == "function_calling" else {"protocol": protocol}
        config = write_config(openai_model(server), apis=[example_tools_config(api.url)], **strategy)
        environment, listener = local_run(config)
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
        second_request = server.requests[1].body
    # Then the run called the weather tool once and answered with the real reply's answer
    assert (execution.status, meta.status, meta.stop_reason, meta.answer) == (
        "SUCCEEDED",
        "SUCCEEDED",
        "final_answer",
        ANSWER,
    )
    assert listener.entered().count("InvokeTool") == 1
    assert [call["name"] for step in steps_of(environment, meta, "parse") for call in step.calls or []] == [
        "get_weather"
    ]
    # And the trace shows each reply's thinking as a reasoning step, apart from the decision's thought
    reasoning = steps_of(environment, meta, "reasoning")
    assert [step.iteration for step in reasoning] == [1, 2]
    assert all("DECOY ANSWER" in (step.thought or "") for step in reasoning)
    assert all("DECOY" not in (step.thought or "") for step in steps_of(environment, meta, "parse"))
    # And the earlier turn went back to the model without its thinking, costing no tokens
    assert "DECOY" not in str(second_request["messages"])


BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SIGNATURE = "ErUBCkYIBxgCIkCz3XzRkXAmQiMOb4dHvnVzoKZhCizqPl1gc0nr8s0gTAX"
FIRST_THOUGHT = "The user wants the weather in Paris; the get_weather tool gives it."
SEALED = base64.b64encode(b"\x00sealed").decode()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsLoopback]:
    """The loopback Bedrock endpoint (strict about Claude's signed thinking), reached as boto3 reaches AWS."""
    with AwsLoopback() as loopback:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", loopback.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        yield loopback


def claude(**profile: Any) -> dict[str, Any]:
    model = {
        "provider": "bedrock",
        "model_id": BEDROCK_MODEL,
        "temperature": 0.7,
        "capabilities": {"native_tools": True},
    }
    return {"model": model, "strategy": "function_calling", **profile}


def test_a_bedrock_run_with_thinking_sends_the_signed_thinking_back_on_the_tool_result_turn(
    aws: AwsLoopback, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given Claude with extended thinking, whose first reply thinks (signed) and calls the weather tool
        signed = {"reasoningText": {"text": FIRST_THOUGHT, "signature": SIGNATURE}}
        call = {"toolUseId": "tooluse_weather", "name": "get_weather", "input": {"city": "Paris"}}
        aws.enqueue_converse(converse_reply(tool_uses=[call], reasoning=[signed]))
        aws.enqueue_converse(converse_reply(text=ANSWER, reasoning=[{"redactedContent": SEALED}]))
        settings = claude(reasoning={"budget_tokens": 2048})
        config = write_config(settings.pop("model"), apis=[example_tools_config(api.url)], **settings)
        environment, _ = local_run(config)
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
    first, second = (request.body for request in aws.requests if request.path.endswith("/converse"))
    # Then both calls asked for thinking with its budget, room for it in maxTokens, and no temperature
    for body in (first, second):
        assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
        assert body["inferenceConfig"] == {"maxTokens": 2048 + 4096}
    # And the tool-result turn sent the first reply's thinking back, signed and first, before its tool use
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"reasoningContent": signed}
    assert "toolUse" in assistant["content"][1]
    assert "toolResult" in second["messages"][2]["content"][0]
    # And the run answered, its trace showing the thinking as reasoning (the redacted block as such)
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", ANSWER)
    reasoning = steps_of(environment, meta, "reasoning")
    assert [step.thought for step in reasoning] == [FIRST_THOUGHT, None]
    assert "1 redacted block" in (reasoning[1].note or "")


THINKS_BY_DEFAULT = "global.anthropic.claude-haiku-5-5"


def test_a_bedrock_run_of_a_model_thinking_by_default_sends_its_signed_thinking_back_and_no_temperature(
    aws: AwsLoopback, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given Claude Haiku 5.5 (thinking by default, as the catalog says), a profile with no `reasoning:`, a
        # temperature and a small max_tokens, whose first reply thinks unasked (signed) and calls a tool
        signed = {"reasoningText": {"text": FIRST_THOUGHT, "signature": SIGNATURE}}
        call = {"toolUseId": "tooluse_weather", "name": "get_weather", "input": {"city": "Paris"}}
        aws.enqueue_converse(converse_reply(tool_uses=[call], reasoning=[signed]))
        aws.enqueue_converse(converse_reply(text=ANSWER))
        settings = claude(max_tokens=1024)
        settings["model"]["model_id"] = THINKS_BY_DEFAULT
        config = write_config(settings.pop("model"), apis=[example_tools_config(api.url)], **settings)
        environment, _ = local_run(config)
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
    first, second = (request.body for request in aws.requests if request.path.endswith("/converse"))
    # Then neither call asked for thinking nor sent a temperature, and max_tokens held the default effort's
    # thinking room besides the profile's 1,024 for the answer
    for body in (first, second):
        assert "additionalModelRequestFields" not in body
        assert body["inferenceConfig"] == {"maxTokens": 1024 + 4096}
    # And the tool-result turn sent the signed thinking back, first, before its tool use
    assistant = second["messages"][1]
    assert assistant["content"][0] == {"reasoningContent": signed}
    assert "toolUse" in assistant["content"][1]
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", ANSWER)


def test_the_loopback_refuses_a_tool_result_turn_that_lost_its_signed_thinking(aws: AwsLoopback) -> None:
    # Given a thinking request whose tool-use turn comes back without its thinking, sent as boto3 sends it
    client = boto3.client("bedrock-runtime", endpoint_url=aws.url)
    messages = [
        {"role": "user", "content": [{"text": "Paris?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "get_weather", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"text": "rain"}]}}]},
    ]
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    # When it is sent / Then Bedrock's refusal comes back
    with pytest.raises(ClientError) as refused:
        client.converse(modelId=BEDROCK_MODEL, messages=messages, additionalModelRequestFields=thinking)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "must start with a thinking block" in refused.value.response["Error"]["Message"]


def test_an_openai_run_asks_for_its_effort_and_counts_the_reasoning_tokens(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    with strict_openai_server(ProviderRules.for_model("gpt-5-mini")) as server, ExampleToolApi() as api:
        # Given an OpenAI reasoning model (which refuses sampling fields) at high effort, a profile that still
        # sets a temperature, and a model billing reasoning as output that thinks on each call
        for reply in (
            chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}], usage=(100, 300)),
            chat_completion(content=ANSWER, usage=(180, 250)),
        ):
            reply["usage"]["completion_tokens_details"] = {"reasoning_tokens": 200}
            server.enqueue(body=reply)
        prices = {"input_per_million": 1.0, "output_per_million": 10.0}
        config = write_config(
            openai_model(server, model="gpt-5-mini", prices=prices),
            strategy="function_calling",
            reasoning={"effort": "high"},
            temperature=0.3,
            max_tokens=4000,
            apis=[example_tools_config(api.url)],
        )
        environment, _ = local_run(config)
        monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
        capfd.readouterr()
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        bodies = [request.body for request in server.requests]
        metrics = emitted(capfd.readouterr().out)
    # Then every call asked for high reasoning effort, with its output cap named as the model takes it
    assert [body["reasoning_effort"] for body in bodies] == ["high", "high"]
    assert [(body.get("max_completion_tokens"), "temperature" in body) for body in bodies] == [(4000, False)] * 2
    # And the run's usage counts the reasoning tokens within its output, and prices them
    assert (meta.usage.output_tokens, meta.usage.reasoning_tokens) == (550, 400)
    assert meta.usage.cost_usd == pytest.approx((280 * 1.0 + 550 * 10.0) / 1_000_000)
    assert [step.reasoning_tokens for step in steps_of(environment, meta, "llm")] == [200, 200]
    # And the metrics count them, per call and per run
    outcome = {"status": "SUCCEEDED", "stop_reason": "final_answer"}
    assert (total(metrics, "ModelReasoningTokens"), total(metrics, "RunReasoningTokens", **outcome)) == (400, 400)


def test_a_native_run_against_a_server_without_a_tool_parser_calls_the_tool_it_wrote(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a Qwen3 served raw: its thinking and its call left in the text, then its answer
        call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
        server.enqueue(body=chat_completion(content="<think>The weather tool.</think>\n\n" + call))
        server.enqueue(body=chat_completion(content=ANSWER))
        config = write_config(openai_model(server), apis=[example_tools_config(api.url)], strategy="function_calling")
        environment, listener = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        second = server.requests[1].body["messages"]
    # Then the tool ran and the run answered
    assert listener.entered().count("InvokeTool") == 1
    assert (meta.status, meta.answer) == ("SUCCEEDED", ANSWER)
    # And the call went back as the native pair a provider expects: the assistant's call, then its result
    assistant, result = second[-2], second[-1]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["get_weather"]
    assert (result["role"], result["tool_call_id"]) == ("tool", assistant["tool_calls"][0]["id"])
