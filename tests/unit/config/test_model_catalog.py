"""The model catalog: entries found by the id the provider is asked for, a configuration's entries first."""

from __future__ import annotations

from stepwise.config.model import StepwiseConfig
from stepwise.config.model_catalog import packaged_catalog


def config_with(models: dict[str, object], catalog: list[object] | None = None) -> StepwiseConfig:
    """A configuration with these models and one profile on the first."""
    raw: dict[str, object] = {"models": models, "profiles": {"default": {"model": next(iter(models))}}}
    if catalog is not None:
        raw["model_catalog"] = catalog
    return StepwiseConfig.from_mapping(raw, environ={})


def test_a_cross_region_profile_id_finds_its_model_entry() -> None:
    # Given a global cross-Region inference profile id of a model in the catalog
    profile_id = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
    # When it is looked up, then the model's entry answers, with its window
    entry = packaged_catalog().lookup(profile_id)
    assert entry is not None
    assert (entry.name, entry.context_window) == ("claude-haiku-4-5", 200_000)


def test_an_unknown_model_has_no_entry() -> None:
    # Given a model id no entry names, when it is looked up, then nothing is found
    assert packaged_catalog().lookup("my-own-finetune") is None


def test_a_configuration_entry_overrides_the_packaged_one() -> None:
    # Given a configuration that gives its own window for a model the package knows
    config = config_with(
        {"m": {"provider": "bedrock", "model_id": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}},
        [{"name": "my-haiku", "match": ["anthropic.claude-haiku-4-5*"], "context_window": 10_000}],
    )
    # When the model's facts are read, then the configuration's entry wins
    facts = config.model_facts("m")
    assert facts is not None
    assert (facts.name, facts.context_window) == ("my-haiku", 10_000)
