"""What the providers are told and what their answers mean: errors classified from real bodies, requests
shaped by the catalog's parameter rules, prompt-cache checkpoints, cached tokens read and priced, and
model calls bounded by the run's deadline."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from stepwise.config.llm import BedrockModelConfig, ModelPrices, OpenAIModelConfig
from stepwise.config.model_catalog import packaged_catalog
from stepwise.errors import ContextWindowExceeded, LLMDeadlineReached, LLMPermanentError, LLMTransientError
from stepwise.llm.bedrock import BedrockConverseChatModel
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.llm.provider_errors import bedrock_error, openai_error
from stepwise.llm.request_shaping import shaped_request
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, SamplingOptions, ToolSpec
from stepwise.steps.model_call import call_within_deadline
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.provider_errors import recorded_error

HAIKU_PROFILE = "global.anthropic.claude-haiku-4-5-20251001-v1:0"


def facts(model_id: str) -> Any:
    found = packaged_catalog().lookup(model_id)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("provider", "name", "expected"),
    [
        ("openai", "context_length_exceeded", ContextWindowExceeded),
        ("vllm", "context_length_exceeded", ContextWindowExceeded),
        ("anthropic", "prompt_too_long", ContextWindowExceeded),
        ("anthropic", "overloaded_error", LLMTransientError),
        ("openai", "invalid_api_key", LLMPermanentError),
        ("openai", "model_not_found", LLMPermanentError),
    ],
)
def test_openai_compatible_errors_are_classified_from_the_providers_own_bodies(
    provider: str, name: str, expected: type[Exception]
) -> None:
    # Given a recorded error body of a real provider
    recorded = recorded_error(provider, name, window=8192, tokens=9000, max_tokens=512, model="gpt-x")
    error = recorded["body"]["error"]
    code = error.get("code") if isinstance(error.get("code"), str) else error.get("type")
    # When it is classified / Then it is the error the run acts on (exactly that class)
    assert type(openai_error("gpt-x", recorded["status"], code, error["message"])) is expected


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("use_case_form", "use-case form"),
        ("on_demand_not_supported", "inference profile"),
        ("access_denied", "bedrock:InvokeModel on the inference profile"),
    ],
)
def test_bedrock_set_up_errors_carry_their_fix(name: str, fix: str) -> None:
    # Given a Bedrock refusal a fresh account or an old model id meets
    recorded = recorded_error("bedrock", name, model="amazon.nova-2-lite-v1:0", caller="dev", resource="x")
    # When it is classified
    error = bedrock_error("m", recorded["status"], recorded["code"], recorded["message"])
    # Then it is permanent and says how to fix it
    assert type(error) is LLMPermanentError and fix in str(error)


def test_bedrock_input_too_long_is_a_context_window_error() -> None:
    recorded = recorded_error("bedrock", "input_too_long")
    assert type(bedrock_error("m", 400, recorded["code"], recorded["message"])) is ContextWindowExceeded


def test_claude_is_sent_temperature_or_top_p_never_both() -> None:
    # Given a request with both, for Claude Haiku 4.5
    request = ChatRequest(messages=[], temperature=0.2, sampling=SamplingOptions(top_p=0.9))
    # When it is shaped by the catalog's rules
    shaped, notes = shaped_request(request, facts(HAIKU_PROFILE))
    # Then top_p is dropped and the trace note says why
    assert (shaped.temperature, shaped.sampling.top_p) == (0.2, None)
    assert notes == ["top_p dropped: claude-haiku-4-5 takes only one of temperature, top_p"]


def test_a_reasoning_model_is_sent_no_sampling_field_and_at_most_its_largest_output() -> None:
    # Given a request with temperature, a penalty and an output cap past gpt-5-mini's largest output
    request = ChatRequest(
        messages=[], temperature=0.7, max_tokens=500_000, sampling=SamplingOptions(presence_penalty=1)
    )
    # When it is shaped
    shaped, notes = shaped_request(request, facts("gpt-5-mini"))
    # Then the refused fields are gone and the cap is cut
    assert (shaped.temperature, shaped.sampling.presence_penalty, shaped.max_tokens) == (None, None, 128_000)
    assert len(notes) == 3


def test_a_model_the_catalog_does_not_know_is_sent_as_asked() -> None:
    request = ChatRequest(messages=[], temperature=0.2, sampling=SamplingOptions(top_p=0.9))
    assert shaped_request(request, None) == (request, [])


class RecordingConverse:
    """A bedrock-runtime client that records the Converse request and answers it."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def converse(self, **params: Any) -> dict[str, Any]:
        self.params = params
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 100, "outputTokens": 5, "cacheReadInputTokens": 4200, "cacheWriteInputTokens": 0},
        }


def converse_request(system_chars: int) -> ChatRequest:
    return ChatRequest(
        messages=[ChatMessage(role="system", content="x" * system_chars), ChatMessage(role="user", content="hi")],
        tools=[ToolSpec(name="current_time", description="The time")],
        tool_choice="auto",
    )


def test_a_long_stable_prefix_gets_cache_points_bedrock_accepts() -> None:
    # Given Claude Haiku 4.5 through a profile and a system prompt past its 4,096-token minimum
    client = RecordingConverse()
    model = BedrockConverseChatModel(
        BedrockModelConfig(provider="bedrock", model_id=HAIKU_PROFILE), client=client, facts=facts(HAIKU_PROFILE)
    )
    # When it is called
    completion = model.complete(converse_request(system_chars=20_000))
    # Then the system prompt and the conversation end in a cachePoint, in a request botocore's model accepts
    assert client.params["system"][-1] == {"cachePoint": {"type": "default"}}
    assert client.params["messages"][-1]["content"][-1] == {"cachePoint": {"type": "default"}}
    shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
    assert shape is not None and not ParamValidator().validate(client.params, shape).has_errors()
    # And the cache reads are counted apart, within the input tokens
    assert (completion.usage.input_tokens, completion.usage.cache_read_tokens) == (4300, 4200)


def test_a_prefix_under_the_minimum_gets_no_cache_point() -> None:
    client = RecordingConverse()
    model = BedrockConverseChatModel(
        BedrockModelConfig(provider="bedrock", model_id=HAIKU_PROFILE), client=client, facts=facts(HAIKU_PROFILE)
    )
    model.complete(converse_request(system_chars=400))
    assert "cachePoint" not in str(client.params)


def test_openai_cached_tokens_are_read_and_priced_at_the_cache_rate() -> None:
    # Given OpenAI's automatic caching reporting 3,000 of 4,000 prompt tokens as cached
    body = chat_completion(content="ok", usage=(4000, 100))
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 3000}
    with FakeOpenAIServer() as server:
        server.enqueue(body=body)
        config = OpenAIModelConfig(provider="openai", base_url=server.base_url, model="gpt-5-mini")
        usage = OpenAICompatibleChatModel(config, facts=facts("gpt-5-mini")).complete(converse_request(10)).usage
    # When it is priced at gpt-5-mini's catalog prices
    catalog = facts("gpt-5-mini").prices
    prices = ModelPrices(
        input_per_million=catalog.input, output_per_million=catalog.output, cache_read_per_million=catalog.cache_read
    )
    # Then the cached tokens cost a tenth of the others
    assert usage.cache_read_tokens == 3000
    expected = (1000 * 0.25 + 3000 * 0.025 + 100 * 2.0) / 1_000_000
    assert prices.cost_usd(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == pytest.approx(expected)


def test_claude_behind_an_openai_compatible_gateway_gets_cache_control_marks() -> None:
    # Given Claude Haiku 4.5 behind an OpenAI-compatible gateway, with a long system prompt
    with FakeOpenAIServer() as server:
        config = OpenAIModelConfig(provider="openai", base_url=server.base_url, model="claude-haiku-4-5")
        OpenAICompatibleChatModel(config, facts=facts("claude-haiku-4-5")).complete(converse_request(20_000))
        messages = server.requests[0].body["messages"]
    # Then the system prompt and the newest message carry Anthropic's cache_control
    assert messages[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert messages[-1]["content"][0]["cache_control"] == {"type": "ephemeral"}


class FailingModel:
    """A model that fails transiently every time, recording the timeouts it was given; time passes per call."""

    def __init__(self, clock: list[float], seconds_per_call: float) -> None:
        self.clock = clock
        self.seconds_per_call = seconds_per_call
        self.timeouts: list[float] = []

    def complete(self, request: ChatRequest) -> Completion:
        assert request.timeout_seconds is not None
        self.timeouts.append(request.timeout_seconds)
        self.clock[0] += min(self.seconds_per_call, request.timeout_seconds)
        raise LLMTransientError("HTTP 429")


def test_far_from_the_deadline_a_transient_failure_goes_to_the_state_machine() -> None:
    clock = [0.0]
    model = FailingModel(clock, seconds_per_call=0.1)
    with pytest.raises(LLMTransientError) as raised:
        call_within_deadline(
            model, ChatRequest(messages=[]), deadline=600, clock=lambda: clock[0], sleep=lambda s: None
        )
    assert type(raised.value) is LLMTransientError and len(model.timeouts) == 1


def test_near_the_deadline_the_step_retries_then_stops_at_the_deadline() -> None:
    # Given a model that keeps failing, 10 s before the run's deadline
    clock = [0.0]
    model = FailingModel(clock, seconds_per_call=0.5)

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    # When the call is made
    with pytest.raises(LLMDeadlineReached):
        call_within_deadline(model, ChatRequest(messages=[]), deadline=10, clock=lambda: clock[0], sleep=sleep)
    # Then it was retried in the step, each attempt's timeout within the time left, and it stopped in time
    assert len(model.timeouts) > 1
    assert all(timeout <= 10 for timeout in model.timeouts)
    assert clock[0] <= 10


def test_a_hanging_call_is_cut_at_the_deadline() -> None:
    clock = [100.0]
    model = FailingModel(clock, seconds_per_call=60)
    with pytest.raises(LLMDeadlineReached):
        call_within_deadline(
            model, ChatRequest(messages=[]), deadline=103, clock=lambda: clock[0], sleep=lambda s: None
        )
    assert model.timeouts == [3.0]


def test_an_invalid_model_id_carries_the_fix_that_checks_the_id() -> None:
    # Given Bedrock's refusal of a model id it does not know, for an in-Region id
    recorded = recorded_error("bedrock", "invalid_model_id")
    # When it is classified
    error = bedrock_error("amazon.nova-2-lite", recorded["status"], recorded["code"], recorded["message"])
    # Then it is permanent and says to check the id against the model's card
    assert type(error) is LLMPermanentError and "model's card" in str(error)


def test_a_geographic_profile_called_outside_its_geography_names_the_region() -> None:
    # Given the same refusal of the US profile, called from eu-west-1
    recorded = recorded_error("bedrock", "invalid_model_id")
    model_id = "us.amazon.nova-2-lite-v1:0"
    # When it is classified with the Region of the call
    error = bedrock_error(model_id, recorded["status"], recorded["code"], recorded["message"], region="eu-west-1")
    # Then the fix names the Region as the cause and the global profile to use instead
    assert "called from eu-west-1" in str(error) and "global.amazon.nova-2-lite-v1:0" in str(error)


def test_a_geographic_profile_called_inside_its_geography_gets_the_plain_fix() -> None:
    # Given the refusal of the US profile called from us-east-1 / When it is classified / Then no Region is blamed
    recorded = recorded_error("bedrock", "invalid_model_id")
    error = bedrock_error("us.x.y", recorded["status"], recorded["code"], recorded["message"], region="us-east-1")
    assert "called from" not in str(error) and "model's card" in str(error)
