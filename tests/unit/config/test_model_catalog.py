"""The model catalog: entries found by the id the provider is asked for, a configuration's entries first."""

from __future__ import annotations

from stepwise.config.model import StepwiseConfig
from stepwise.config.model_catalog import ModelCatalog, ModelFacts, packaged_catalog


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


class CountingEntry(ModelFacts):
    """A catalog entry that counts how often an id is matched against it."""

    matched: int = 0

    def matches(self, model_id: str) -> bool:
        self.matched += 1
        return super().matches(model_id)


def test_a_model_asked_for_again_and_again_is_matched_against_the_catalog_once() -> None:
    # Given a catalog whose only entry counts the ids matched against it
    entry = CountingEntry(name="haiku", match=["anthropic.claude-haiku-4-5*"], context_window=200_000)
    catalog = ModelCatalog(models=[entry])

    # When a model's facts are asked for five times, as the steps of an iteration do
    found = [catalog.lookup("eu.anthropic.claude-haiku-4-5-20251001-v1:0") for _ in range(5)]

    # Then each answer is the entry, matched once
    assert {facts.name if facts else None for facts in found} == {"haiku"}
    assert entry.matched == 1


def test_a_configuration_resolves_its_catalog_once() -> None:
    # Given a configuration with an entry of its own
    config = config_with(
        {"m": {"provider": "openai", "model": "my-finetune", "base_url": "http://127.0.0.1:9/v1"}},
        [{"name": "mine", "match": ["my-finetune"], "context_window": 10_000}],
    )

    # When its catalog is asked for twice / Then it is the same catalog, its entry first
    assert config.catalog is config.catalog
    assert config.catalog.models[0].name == "mine"


def test_every_shipped_entry_names_where_its_facts_were_read() -> None:
    # Given the shipped catalog / Then each entry has a source, and each priced one an input and output price
    for entry in packaged_catalog().models:
        assert entry.source, entry.name
        assert entry.prices is None or (entry.prices.input >= 0 and entry.prices.output > 0), entry.name


def test_a_profile_or_model_arn_finds_the_model_it_names() -> None:
    # Given a system-defined profile's ARN, as a configuration may give it
    arn = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.amazon.nova-2-lite-v1:0"
    # When it is looked up / Then the model's entry answers
    entry = packaged_catalog().lookup(arn)
    assert entry is not None and entry.name == "amazon-nova-2-lite"


def test_a_model_without_configured_prices_is_priced_from_the_catalog() -> None:
    # Given a model config without prices, for a model the catalog prices
    config = config_with({"m": {"provider": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-5-mini"}})
    # When its prices are read / Then they are the catalog's, cache reads included
    prices = config.prices_of("m")
    assert prices is not None
    assert (prices.input_per_million, prices.output_per_million, prices.cache_read_per_million) == (0.25, 2.0, 0.025)


def test_a_configured_price_wins_over_the_catalog() -> None:
    config = config_with(
        {
            "m": {
                "provider": "openai",
                "base_url": "https://api.openai.com/v1",
                "model": "gpt-5-mini",
                "prices": {"input_per_million": 0.2, "output_per_million": 1.6},
            }
        }
    )
    prices = config.prices_of("m")
    assert prices is not None and prices.input_per_million == 0.2


def test_a_cost_budget_is_accepted_for_a_model_the_catalog_prices() -> None:
    # Given a cost cap on a profile whose model has no prices of its own but catalog prices
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "bedrock", "model_id": "us.amazon.nova-2-lite-v1:0"}},
            "profiles": {"default": {"model": "m", "limits": {"max_cost_usd": 0.5}}},
        },
        environ={},
    )
    # Then the configuration loads, the cap priced at the catalog's prices
    assert config.model_prices("default") is not None


def test_the_roots_schema_leaves_the_catalog_entries_to_their_own_model() -> None:
    # Given the configuration's root model, whose validator every function that reads the file builds at init
    # When its schema is read
    schema = repr(StepwiseConfig.__pydantic_core_schema__)

    # Then it holds no catalog entry's schema: the file's own entries are validated by `ModelFacts` (as the
    # packaged catalog's are), so the root does not build that part a second time
    assert "ModelFacts" not in schema
    assert "CatalogPrices" not in schema
