"""The intent configuration: Stepwise's own form, a Higress ai-intent configuration as it is, and errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from stepwise.config.intent import Category, IntentConfig
from stepwise.config.llm import OpenAIModelConfig

HIGRESS_AI_INTENT_YAML = """
scene:
  categories:
    - use_for: intent-route
      options:
        - Finance
        - E-commerce
        - Law
        - Higress
    - use_for: disable-cache
      options:
        - Time-sensitive
        - Non-time-sensitive
  prompt: |
    You are an intent classifier. The question is: ${question}
    The categories are: ${categories}
    Answer with one JSON line per category: {"use_for": "...", "result": "..."}
llm:
  proxyServiceName: "intent-service.static"
  proxyUrl: "http://127.0.0.1:80/intent/compatible-mode/v1/chat/completions"
  proxyDomain: "127.0.0.1"
  proxyPort: "80"
  proxyModel: "qwen-long"
  proxyApiKey: ""
  proxyTimeout: "10000"
keyFrom:
  requestBody: "messages.@reverse.0.content"
  responseBody: "choices.0.message.content"
"""

STEPWISE_INTENT_YAML = """
mode: llm
model: intent
timeout_seconds: 3
categories:
  - use_for: intent-route
    options: [Finance, E-commerce, Law, Others]
    default: Others
key_from:
  request_body: "messages.@reverse.0.content"
keywords:
  - {use_for: intent-route, option: Finance, patterns: ["stock", "invoice", "\\\\bETF\\\\b"]}
"""


def validation_message(section: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        IntentConfig.model_validate(section)
    return str(caught.value)


def test_a_higress_configuration_is_accepted_as_it_is() -> None:
    # Given a Higress ai-intent plugin configuration pasted into the intent section
    raw = yaml.safe_load(HIGRESS_AI_INTENT_YAML)
    # When it is validated
    config = IntentConfig.model_validate(raw)
    # Then its categories, prompt and question path are those of Stepwise's own form
    assert [category.use_for for category in config.categories] == ["intent-route", "disable-cache"]
    assert config.prompt is not None and "${question}" in config.prompt
    assert config.key_from.request_body == "messages.@reverse.0.content"
    assert config.defaults() == {"intent-route": "Higress", "disable-cache": "Non-time-sensitive"}


def test_a_validated_higress_configuration_survives_a_dump_and_reload() -> None:
    # Given the Higress configuration, validated once
    config = IntentConfig.model_validate(yaml.safe_load(HIGRESS_AI_INTENT_YAML))
    # When it is dumped and validated again, as a payload or cache would
    reloaded = IntentConfig.model_validate(config.model_dump())
    # Then nothing is lost or duplicated
    assert reloaded.categories == config.categories and reloaded.prompt == config.prompt


def test_the_higress_llm_block_becomes_an_openai_compatible_model_config() -> None:
    # Given the Higress configuration
    config = IntentConfig.model_validate(yaml.safe_load(HIGRESS_AI_INTENT_YAML))
    # When its llm block is converted
    model_config = config.llm_model_config()
    # Then it is the OpenAI-compatible model config: base URL without /chat/completions, seconds not ms
    assert model_config == {
        "provider": "openai",
        "base_url": "http://127.0.0.1:80/intent/compatible-mode/v1",
        "model": "qwen-long",
        "api_key": None,
        "timeout_seconds": 10.0,
    }
    assert OpenAIModelConfig.model_validate(model_config).base_url.endswith("/compatible-mode/v1")


def test_the_older_higress_pipe_separated_category_is_accepted() -> None:
    # Given the older Higress form with one pipe-separated category and a printf-style prompt
    raw = {
        "scene": {"category": "金融|电商|法律|Higress", "prompt": "Question: %s. Categories: %s."},
        "llm": {"proxyServiceName": "intent-service.static", "proxyUrl": "https://llm.example/v1/chat/completions"},
    }
    # When it is validated
    config = IntentConfig.model_validate(raw)
    # Then it is one category named after the property Higress sets
    assert [(c.use_for, c.options) for c in config.categories] == [
        ("intent_category", ["金融", "电商", "法律", "Higress"])
    ]


def test_without_proxy_timeout_the_section_time_limit_is_used() -> None:
    # Given an llm block without proxyTimeout and a section time limit of 2 s
    raw = yaml.safe_load(HIGRESS_AI_INTENT_YAML)
    del raw["llm"]["proxyTimeout"]
    raw["timeout_seconds"] = 2
    # When the llm block is converted
    model_config = IntentConfig.model_validate(raw).llm_model_config()
    # Then the section's limit applies rather than Higress's 10 s default
    assert model_config is not None and model_config["timeout_seconds"] == 2


def test_the_stepwise_form_names_a_model_and_has_no_llm_block() -> None:
    # Given Stepwise's own form
    config = IntentConfig.model_validate(yaml.safe_load(STEPWISE_INTENT_YAML))
    # When it is read
    # Then the model is named, there is nothing to convert, and the keyword pattern is kept verbatim
    assert (config.model, config.llm_model_config(), config.model_label) == ("intent", None, "intent")
    assert config.keywords[0].patterns == ["stock", "invoice", r"\bETF\b"]


def test_camel_case_keys_are_accepted() -> None:
    # Given camelCase keys, as the Higress documentation writes them
    raw = {"model": "intent", "keyFrom": {"requestBody": "input"}, "categories": [{"useFor": "x", "options": ["A"]}]}
    # When it is validated
    config = IntentConfig.model_validate(raw)
    # Then they mean the same as snake_case
    assert (config.key_from.request_body, config.categories[0].use_for) == ("input", "x")


def test_an_unknown_key_is_rejected_by_name() -> None:
    # Given a misspelt key
    section = {"model": "intent", "categories": [{"use_for": "x", "options": ["A"]}], "timeout_secs": 3}
    # When it is validated / Then the error names it
    assert "timeout_secs" in validation_message(section)


def test_a_default_that_is_not_an_option_is_rejected() -> None:
    # Given a default outside the options
    # When the category is validated / Then the error says which value and which options
    with pytest.raises(ValidationError, match="default 'Travel' is not one of the options"):
        Category.model_validate({"use_for": "intent-route", "options": ["Finance", "Others"], "default": "Travel"})


@pytest.mark.parametrize(
    ("options", "reason"),
    [([], "at least 1 item"), (["Finance", "finance"], "options must be unique"), (["Finance", " "], "empty")],
    ids=["none", "repeated-ignoring-case", "blank"],
)
def test_bad_options_are_rejected_with_the_reason(options: list[str], reason: str) -> None:
    # Given a category with unusable options
    # When it is validated / Then the error names the field and the reason
    with pytest.raises(ValidationError) as caught:
        Category.model_validate({"use_for": "intent-route", "options": options})
    assert "options" in str(caught.value) and reason in str(caught.value)


def test_the_default_option_is_the_last_when_none_is_given() -> None:
    # Given a category without a default
    category = Category(use_for="intent-route", options=["Finance", "Law", "Others"])
    # When its default option is asked for / Then it is the last option
    assert category.default_option == "Others"


def test_llm_mode_needs_a_model() -> None:
    # Given llm mode with neither model nor llm block
    section = {"mode": "llm", "categories": [{"use_for": "x", "options": ["A"]}]}
    # When it is validated / Then the error says what is missing
    assert "mode llm needs model" in validation_message(section)


def test_a_keyword_rule_for_an_unknown_option_is_rejected() -> None:
    # Given a keyword rule choosing an option the category does not have
    section = {
        "mode": "keywords",
        "categories": [{"use_for": "intent-route", "options": ["Finance", "Others"]}],
        "keywords": [{"use_for": "intent-route", "option": "Travel", "patterns": ["flight"]}],
    }
    # When it is validated / Then the error names the rule's field
    assert "keywords.0.option" in validation_message(section)


def test_a_keyword_pattern_that_is_not_a_regex_is_rejected() -> None:
    # Given an invalid regular expression
    section = {
        "mode": "keywords",
        "categories": [{"use_for": "intent-route", "options": ["Finance", "Others"]}],
        "keywords": [{"use_for": "intent-route", "option": "Finance", "patterns": ["(unclosed"]}],
    }
    # When it is validated / Then the error quotes the pattern
    assert "pattern '(unclosed': not a regular expression: missing )" in validation_message(section)


def test_categories_in_both_places_are_rejected() -> None:
    # Given categories under scene and at the top level
    category = {"use_for": "x", "options": ["A"]}
    section = {"model": "intent", "scene": {"categories": [category]}, "categories": [category]}
    # When it is validated / Then the error asks to keep one
    assert "both under scene and at the top level" in validation_message(section)


def test_off_mode_needs_no_model_and_no_categories() -> None:
    # Given classification switched off
    config = IntentConfig.model_validate({"mode": "off"})
    # When it is read / Then there is nothing to classify
    assert (config.categories, config.defaults()) == ([], {})
