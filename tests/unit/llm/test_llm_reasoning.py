"""A profile's thinking, as each provider documents it, and the sampling fields that thinking forbids."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.model import AgentProfile
from stepwise.config.model_catalog import ModelFacts, ParameterRules, ReasoningFacts
from stepwise.config.reasoning import ReasoningSetting, reasoning_problem, resolve_reasoning
from stepwise.llm.reasoning import allowed_tool_choice, shape_converse_params, shape_openai_payload
from stepwise.models.messages import ChatMessage, ChatRequest, ReasoningControl, SamplingOptions
from stepwise.models.run import RunOptions
from stepwise.steps.model_request import reasoning_setting


def facts(control: ReasoningControl, *, drop: list[Any] | None = None, max_output: int | None = None) -> ModelFacts:
    return ModelFacts(
        name="m",
        match=["m"],
        max_output_tokens=max_output,
        rules=ParameterRules(unsupported_when_reasoning=drop or []),
        reasoning=ReasoningFacts(control=control),
    )


def request_for(
    setting: ReasoningSetting, control: ReasoningControl, *, max_tokens: int | None = None, **fields: Any
) -> ChatRequest:
    reasoning, room, _ = resolve_reasoning(
        setting, facts(control, drop=["temperature", "top_p"]), max_tokens, provider="openai"
    )
    return ChatRequest(
        messages=[ChatMessage(role="user", content="hi")], reasoning=reasoning, max_tokens=room, **fields
    )


@pytest.mark.parametrize(
    ("control", "setting", "fields"),
    [
        ("openai_effort", ReasoningSetting(effort="high"), {"reasoning_effort": "high"}),
        (
            "deepseek_thinking",
            ReasoningSetting(effort="low"),
            {"thinking": {"type": "enabled"}, "reasoning_effort": "low"},
        ),
        ("deepseek_thinking", ReasoningSetting(enabled=False), {"thinking": {"type": "disabled"}}),
        (
            "qwen_enable_thinking",
            ReasoningSetting(effort="medium"),
            {"enable_thinking": True, "thinking_budget": 4096},
        ),
        ("qwen_enable_thinking", ReasoningSetting(enabled=False), {"enable_thinking": False}),
        (
            "chat_template_kwargs",
            ReasoningSetting(budget_tokens=2000),
            {"chat_template_kwargs": {"enable_thinking": True}},
        ),
        (
            "anthropic_budget",
            ReasoningSetting(budget_tokens=2048),
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
    ],
)
def test_an_openai_compatible_request_gets_the_thinking_fields_its_model_documents(
    control: ReasoningControl, setting: ReasoningSetting, fields: dict[str, Any]
) -> None:
    # Given a model taking thinking the `control` way, and a profile's setting
    payload: dict[str, Any] = {"model": "m", "temperature": 0.3}
    # When the request is shaped
    shape_openai_payload(payload, request_for(setting, control))
    # Then it carries the documented fields, and no temperature while thinking
    expected = {"model": "m"} | fields
    if not setting.enabled:
        expected["temperature"] = 0.3
    assert payload == expected


def test_claude_thinking_goes_in_additional_fields_with_room_in_max_tokens() -> None:
    # Given Claude with a 2048-token thinking budget and no max_tokens
    request = request_for(ReasoningSetting(budget_tokens=2048), "anthropic_budget")
    params: dict[str, Any] = {"inferenceConfig": {"maxTokens": request.max_tokens, "temperature": 0.2, "topP": 0.9}}
    # When the Converse request is shaped
    shape_converse_params(params, request)
    # Then thinking is on with its budget, max_tokens holds it and an answer, and sampling is left out
    assert params == {
        "inferenceConfig": {"maxTokens": 2048 + 4096},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    }


def test_adaptive_claude_takes_an_effort() -> None:
    # Given Claude 4.6 or later, thinking at medium effort
    params: dict[str, Any] = {}
    # When the Converse request is shaped
    shape_converse_params(params, request_for(ReasoningSetting(effort="medium"), "anthropic_adaptive"))
    # Then thinking is adaptive with that effort
    assert params == {
        "additionalModelRequestFields": {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}
    }


@pytest.mark.parametrize(
    ("effort", "inference"),
    [
        ("low", {"maxTokens": 900, "temperature": 0.1}),
        # At high effort Nova sets its own length: maxTokens, temperature and topP must be unset.
        ("high", None),
    ],
)
def test_nova_takes_its_reasoning_config_and_at_high_effort_no_length_or_sampling(
    effort: Any, inference: dict[str, Any] | None
) -> None:
    # Given Nova 2 thinking at an effort, with a length and a temperature
    request = request_for(ReasoningSetting(effort=effort), "nova", max_tokens=900)
    reasoning = request.reasoning.model_copy(update={"drop_sampling": []}) if request.reasoning else None
    params: dict[str, Any] = {"inferenceConfig": {"maxTokens": 900, "temperature": 0.1, "topP": 0.5}}
    # When the Converse request is shaped
    shape_converse_params(params, request.model_copy(update={"reasoning": reasoning}))
    # Then its reasoningConfig is set, and at high effort nothing of the inference config is left
    assert params["additionalModelRequestFields"] == {
        "reasoningConfig": {"type": "enabled", "maxReasoningEffort": effort}
    }
    expected = None if inference is None else inference | {"topP": 0.5}
    assert params.get("inferenceConfig") == expected


@pytest.mark.parametrize(("choice", "allowed"), [("required", "auto"), ("get_weather", "auto"), ("auto", "auto")])
def test_claude_thinking_relaxes_a_forced_tool_choice(choice: str, allowed: str) -> None:
    # Given Claude thinking and a forcing tool_choice (which Anthropic refuses while thinking)
    request = request_for(ReasoningSetting(budget_tokens=2048), "anthropic_budget", tool_choice=choice)
    # Then the choice sent is auto
    assert allowed_tool_choice(request) == allowed


def test_deepseek_wants_its_reasoning_back_even_without_a_reasoning_setting() -> None:
    # Given DeepSeek (thinking by default) and a profile that says nothing about reasoning
    deepseek = facts("deepseek_thinking").model_copy(
        update={"reasoning": ReasoningFacts(control="deepseek_thinking", pass_back="reasoning_content")}
    )
    # When the request's reasoning is resolved
    reasoning, max_tokens, pass_back = resolve_reasoning(None, deepseek, 500, provider="openai")
    # Then no thinking fields are sent, but reasoning goes back on tool-call turns
    assert (reasoning, max_tokens, pass_back) == (None, 500, "reasoning_content")


@pytest.mark.parametrize(
    ("control", "setting", "max_tokens", "problem"),
    [
        ("nova", ReasoningSetting(budget_tokens=2000), None, "takes an effort"),
        ("openai_effort", ReasoningSetting(enabled=False), None, "cannot be turned off"),
        ("anthropic_budget", ReasoningSetting(budget_tokens=500), None, "at least 1024"),
        ("anthropic_budget", ReasoningSetting(budget_tokens=4096), 4000, "must be larger than the thinking budget"),
    ],
)
def test_a_setting_the_model_cannot_take_is_refused_with_the_reason(
    control: ReasoningControl, setting: ReasoningSetting, max_tokens: int | None, problem: str
) -> None:
    # Given a model and a setting it cannot take / When it is checked
    found = reasoning_problem(setting, facts(control), max_tokens, provider="openai")
    # Then the reason is given
    assert found is not None and problem in found


@pytest.mark.parametrize(
    ("provider", "setting", "sent"),
    [
        ("openai", ReasoningSetting(effort="high"), {"reasoning_effort": "high"}),
        ("openai", ReasoningSetting(enabled=False), {}),
    ],
)
def test_a_model_the_catalog_does_not_describe_is_asked_as_its_provider_kind_takes_it(
    provider: str, setting: ReasoningSetting, sent: dict[str, Any]
) -> None:
    # Given an OpenAI-compatible model the catalog does not describe
    # When its thinking is checked and resolved
    problem = reasoning_problem(setting, None, None, provider=provider)
    reasoning, _, _ = resolve_reasoning(setting, None, None, provider=provider)
    payload: dict[str, Any] = {}
    shape_openai_payload(payload, ChatRequest(messages=[ChatMessage(role="user", content="hi")], reasoning=reasoning))
    # Then it is not refused, and OpenAI's reasoning_effort carries the effort (nothing says "off")
    assert (problem, payload) == (None, sent)


def test_an_unknown_bedrock_model_is_asked_with_claudes_thinking_budget() -> None:
    # Given a Bedrock model the catalog does not describe, with an effort
    setting = ReasoningSetting(effort="medium")
    reasoning, max_tokens, _ = resolve_reasoning(setting, None, None, provider="bedrock")
    params: dict[str, Any] = {}
    # When its Converse parameters are shaped
    shape_converse_params(params, ChatRequest(messages=[ChatMessage(role="user", content="hi")], reasoning=reasoning))
    # Then Claude's thinking carries the effort's budget, with room left for the answer
    assert params["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 4096}}
    assert max_tokens == 4096 + 4096


def test_a_budget_alone_for_an_unknown_openai_model_is_refused_saying_what_is_sent() -> None:
    # Given an OpenAI-compatible model the catalog does not describe, and a budget without an effort
    found = reasoning_problem(ReasoningSetting(budget_tokens=2000), None, None, provider="openai")
    # Then the problem says the field it would be sent in takes an effort, and how to describe the model
    assert found is not None and "reasoning_effort" in found and "model_catalog" in found


@pytest.mark.parametrize(
    ("asked", "enabled", "effort"),
    [
        ("minimal", True, "low"),
        ("medium", True, "medium"),
        ("xhigh", True, "high"),
        ("max", True, "high"),
        ("none", False, None),
    ],
)
def test_a_requests_openai_effort_is_read_on_the_profiles_scale(asked: str, enabled: bool, effort: str | None) -> None:
    # Given a profile that thinks at low effort, and a chat request's reasoning_effort in OpenAI's words
    profile = AgentProfile(model="m", reasoning=ReasoningSetting(effort="low"))
    options = RunOptions(sampling=SamplingOptions(reasoning_effort=asked))
    # When the run's setting is read
    setting = reasoning_setting(profile, options)
    # Then the effort is the profile's nearest, and none turns thinking off
    assert setting is not None and (setting.enabled, setting.effort) == (enabled, effort)


def thinks_by_default(*, max_output: int | None = None) -> ModelFacts:
    return ModelFacts(
        name="claude",
        match=["claude"],
        max_output_tokens=max_output,
        rules=ParameterRules(unsupported_when_reasoning=["temperature", "top_p", "top_k"]),
        reasoning=ReasoningFacts(control="anthropic_adaptive", by_default=True, default_effort="medium"),
    )


@pytest.mark.parametrize(
    ("asked", "max_output", "sized"),
    [(1024, None, 1024 + 4096), (None, None, 4096 + 4096), (1024, 3000, 3000)],
)
def test_a_model_thinking_by_default_gets_room_for_its_thinking_beside_the_answer(
    asked: int | None, max_output: int | None, sized: int
) -> None:
    # Given a model the catalog says thinks by default at medium effort, and a profile without `reasoning:`
    # When the call's reasoning and output cap are resolved
    reasoning, max_tokens, _ = resolve_reasoning(
        None, thinks_by_default(max_output=max_output), asked, provider="bedrock"
    )
    # Then the cap asked for is the answer's, the medium effort's thinking room is added (never past the
    # model's largest output), and the model's rules for thinking apply though nothing asks for it
    assert max_tokens == sized
    assert reasoning is not None and (reasoning.enabled, reasoning.asked) == (True, False)
    assert reasoning.drop_sampling == ["temperature", "top_p", "top_k"]


def test_a_model_thinking_by_default_is_asked_nothing_and_sent_no_sampling_fields() -> None:
    # Given the default thinking of such a model, and a request with a temperature and a top_p
    reasoning, _, _ = resolve_reasoning(None, thinks_by_default(), 1024, provider="bedrock")
    request = ChatRequest(
        messages=[ChatMessage(role="user", content="hi")], reasoning=reasoning, tool_choice="required"
    )
    params: dict[str, Any] = {"inferenceConfig": {"maxTokens": 5120, "temperature": 0.2, "topP": 0.9}}
    # When the Converse request is shaped
    shape_converse_params(params, request)
    # Then no thinking field is sent, the sampling fields are dropped, and tool use is not forced
    assert params == {"inferenceConfig": {"maxTokens": 5120}}
    assert allowed_tool_choice(request) == "auto"


def test_turning_off_a_model_that_thinks_by_default_says_so() -> None:
    # Given a profile's `reasoning: {enabled: false}` for a model that thinks by default
    reasoning, max_tokens, _ = resolve_reasoning(
        ReasoningSetting(enabled=False), thinks_by_default(), 1024, provider="bedrock"
    )
    request = ChatRequest(messages=[ChatMessage(role="user", content="hi")], reasoning=reasoning)
    params: dict[str, Any] = {"inferenceConfig": {"maxTokens": 1024, "temperature": 0.2}}
    # When the Converse request is shaped
    shape_converse_params(params, request)
    # Then thinking is turned off in Claude's field, and the sampling field and output cap stay as asked
    assert params == {
        "inferenceConfig": {"maxTokens": 1024, "temperature": 0.2},
        "additionalModelRequestFields": {"thinking": {"type": "disabled"}},
    }
    assert max_tokens == 1024
