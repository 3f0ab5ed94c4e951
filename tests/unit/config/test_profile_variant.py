"""One profile changed in memory (`stepwise replay --model`): only that profile, checked as the file would be."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.config.profile_variant import ProfileVariant
from stepwise.errors import ConfigError

SCRIPTED: dict[str, Any] = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}
# an OpenAI reasoning model: it always reasons, so `reasoning: {enabled: false}` is refused for it
ALWAYS_REASONS = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "gpt-5-mini"}


def config(**default: Any) -> StepwiseConfig:
    """`default` and `quiet` (thinking off, which its scripted model takes) on a scripted model; model `gpt5`."""
    return StepwiseConfig.model_validate(
        {
            "models": {"scripted": SCRIPTED, "gpt5": ALWAYS_REASONS},
            "profiles": {
                "default": {"model": "scripted", **default},
                "quiet": {"model": "scripted", "reasoning": {"enabled": False}},
            },
        }
    )


def test_only_the_named_profile_changes() -> None:
    # Given a configuration whose other profile sets a reasoning the new model would refuse
    original = config()
    # When the default profile is given the new model and a prompt
    changed = ProfileVariant(profile="default", model="gpt5", system_prompt="Be brief.").applied_to(original)
    # Then that profile has them, and every other profile is as the file has it
    assert (changed.profiles["default"].model, changed.profiles["default"].system_prompt) == ("gpt5", "Be brief.")
    assert changed.profiles["quiet"] == original.profiles["quiet"]
    assert original.profiles["default"].model == "scripted"


def test_a_change_the_profile_itself_cannot_take_is_refused_with_the_reason() -> None:
    # Given a default profile that turns thinking off
    original = config(reasoning={"enabled": False})
    # When it is given a model that always reasons / Then the change is refused, saying why
    with pytest.raises(ConfigError) as refused:
        ProfileVariant(profile="default", model="gpt5").applied_to(original)
    assert "profiles.default.reasoning: model 'gpt5': this model always reasons" in str(refused.value)
