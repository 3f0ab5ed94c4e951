"""A profile's `reasoning:` setting is checked against what its model takes, the catalog saying how it takes it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError

VLLM_QWEN = {"provider": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "my-qwen-finetune"}


def config_with(model: dict[str, Any], reasoning: dict[str, Any], **extra: Any) -> StepwiseConfig:
    raw: dict[str, Any] = {
        "models": {"m": model},
        "profiles": {"default": {"model": "m", "reasoning": reasoning, **extra.pop("profile", {})}},
        **extra,
    }
    return StepwiseConfig.from_mapping(raw, environ={})


def test_a_model_the_catalog_does_not_know_is_told_to_think_with_one_warning_naming_the_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a self-hosted model the packaged catalog does not name, under a model name of this test's own
    model = {**VLLM_QWEN, "model": "my-qwen-unlisted"}
    # When a profile turns its thinking on, and the configuration is read twice
    with caplog.at_level(logging.WARNING, logger="stepwise"):
        raw = {
            "models": {"unlisted": model},
            "profiles": {"default": {"model": "unlisted", "reasoning": {"effort": "high"}}},
        }
        first = StepwiseConfig.from_mapping(raw, environ={})
        StepwiseConfig.from_mapping(raw, environ={})
    # Then it is accepted, and one warning says the thinking goes as OpenAI's reasoning_effort and how to say otherwise
    assert first.profile("default").reasoning is not None
    warnings = [record.getMessage() for record in caplog.records if "not in the model catalog" in record.getMessage()]
    assert len(warnings) == 1
    assert "'unlisted' (my-qwen-unlisted)" in warnings[0] and "reasoning_effort" in warnings[0]
    assert "model_catalog entry with reasoning.control" in warnings[0]


def test_a_configurations_catalog_entry_says_how_its_model_thinks() -> None:
    # Given the same model described by the configuration's own catalog entry
    entry = {"name": "my-qwen", "match": ["my-qwen-*"], "reasoning": {"control": "chat_template_kwargs"}}
    # When a profile turns its thinking on / Then the configuration is valid
    config = config_with(VLLM_QWEN, {"budget_tokens": 2000}, model_catalog=[entry])
    assert config.profile("default").reasoning is not None


@pytest.mark.parametrize(
    ("model", "reasoning", "profile", "problem"),
    [
        (
            {"provider": "bedrock", "model_id": "amazon.nova-2-lite-v1:0"},
            {"budget_tokens": 4000},
            {},
            "takes an effort",
        ),
        (
            {"provider": "bedrock", "model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
            {"budget_tokens": 8000},
            {"max_tokens": 4000},
            "must be larger than the thinking budget",
        ),
        (
            {"provider": "openai", "base_url": "https://api.openai.com/v1", "model": "o3-mini"},
            {"enabled": False},
            {},
            "cannot be turned off",
        ),
    ],
)
def test_a_setting_its_model_cannot_take_is_refused_naming_why(
    model: dict[str, Any], reasoning: dict[str, Any], profile: dict[str, Any], problem: str
) -> None:
    # Given a model and a setting it cannot take / When the configuration is read
    with pytest.raises(ConfigError) as raised:
        config_with(model, reasoning, profile=profile)
    # Then the error names the field and the reason
    assert "profiles.default.reasoning" in str(raised.value) and problem in str(raised.value)


def test_a_setting_that_says_nothing_of_how_much_is_refused() -> None:
    # Given thinking turned on with neither an effort nor a budget / When the configuration is read
    with pytest.raises(ConfigError) as raised:
        config_with({"provider": "bedrock", "model_id": "amazon.nova-2-lite-v1:0"}, {})
    # Then the error says what to give
    assert "effort" in str(raised.value) and "budget_tokens" in str(raised.value)
