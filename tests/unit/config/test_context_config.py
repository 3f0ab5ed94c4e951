"""A profile's context window and budgets, resolved from the profile, its model's entry and the catalog."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.config.check import check_config_file, print_report
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError


def load(model: dict[str, Any], context: dict[str, Any] | None = None, **more_models: Any) -> StepwiseConfig:
    profile: dict[str, Any] = {"model": "m"}
    if context is not None:
        profile["context"] = context
    return StepwiseConfig.from_mapping(
        {"models": {"m": model, **more_models}, "profiles": {"default": profile}}, source="test.yaml", environ={}
    )


def openai(model_id: str, **fields: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": "https://api.example.com/v1", "model": model_id, **fields}


# A model the packaged catalog knows, through a cross-Region inference profile.
HAIKU = {"provider": "bedrock", "model_id": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}


def test_a_model_the_catalog_knows_gets_its_window_and_largest_output_from_it() -> None:
    # Given a profile on a model of the packaged catalog
    config = load(HAIKU)
    facts = config.model_facts("m")
    assert facts is not None and facts.context_window is not None
    # When its limits are resolved; Then they are the catalog's, with the default threshold and floor
    limits = config.context_limits("default")
    assert (limits.window, limits.max_output) == (facts.context_window, facts.max_output_tokens)
    assert (limits.compact_at, limits.min_output, limits.compaction) == (int(facts.context_window * 0.75), 512, True)


def test_a_model_the_catalog_does_not_know_gets_its_window_from_its_entry_or_the_profile() -> None:
    # Given a local model no catalog entry matches, its window in its entry, and another profile's override
    config = load(openai("my-local-llama", context_window=8192, max_output_tokens=2048))
    overridden = load(openai("my-local-llama", context_window=8192), {"window_tokens": 4096, "min_output_tokens": 256})
    # Then each is resolved from where it is set
    assert (config.context_limits("default").window, config.context_limits("default").max_output) == (8192, 2048)
    assert (overridden.context_limits("default").window, overridden.context_limits("default").min_output) == (4096, 256)


def test_without_a_known_window_nothing_is_compacted_and_sessions_get_the_default_budget() -> None:
    # Given a model no one gives a window; When resolved; Then compaction is off and sessions carry 8,000 tokens
    limits = load(openai("my-local-llama")).context_limits("default")
    assert (limits.window, limits.compact_at, limits.compaction, limits.session_tokens) == (None, None, False, 8000)


def test_the_floor_never_takes_more_than_half_the_window() -> None:
    # Given a floor of 6,000 tokens on an 8,192-token window; Then the floor is half the window
    limits = load(openai("x-local", context_window=8192), {"min_output_tokens": 6000}).context_limits("default")
    assert (limits.min_output, limits.compact_at) == (4096, 4096)


def test_a_summary_model_that_is_not_a_model_is_refused_naming_the_field() -> None:
    # Given a profile naming a summary model the file does not have; When loaded; Then the error says where
    with pytest.raises(
        ConfigError, match=r"profiles\.default\.context\.summary_model: 'cheap' is not one of the models"
    ):
        load(HAIKU, {"summary_model": "cheap"})


def test_a_cheaper_summary_model_brings_its_own_window() -> None:
    # Given a profile on a large model whose summaries a small local model writes
    config = load(HAIKU, {"summary_model": "small"}, small=openai("tiny-local", context_window=4096))
    # Then the summarizer's input is bounded by the small model's window
    limits = config.context_limits("default")
    assert (limits.summary_model, limits.summary_window) == ("small", 4096)


def test_a_threshold_outside_its_range_is_refused() -> None:
    # Given a threshold of 99% of the window; When loaded; Then the field and its bound are named
    with pytest.raises(ConfigError, match=r"profiles\.default\.context\.compact_at"):
        load(HAIKU, {"compact_at": 0.99})


def test_config_check_says_what_each_profiles_runs_do_with_the_window(tmp_path: Path) -> None:
    # Given a file with a profile on a model of known window, and one on a model no one gives a window
    config = {
        "models": {"known": openai("x-local", context_window=32_000), "unknown": openai("y-local")},
        "tools": {"builtin": []},
        "profiles": {"default": {"model": "known"}, "other": {"model": "unknown"}},
    }
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # When it is checked
    out = io.StringIO()
    print_report(check_config_file(tmp_path / "stepwise.yaml", environ={}), out)
    # Then each profile says its window and when its runs are summarized, or how to give the window
    assert "context window: 32000 tokens; earlier iterations are summarized past 24000" in out.getvalue()
    assert "context window: not known, so requests are sent whole (set models.unknown.context_window" in out.getvalue()
