"""The model config models: provider selection and validation that names the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from stepwise.config.llm import (
    BedrockModelConfig,
    ModelConfig,
    OpenAIModelConfig,
    ScriptedModelConfig,
)

MODEL_CONFIG: TypeAdapter[Any] = TypeAdapter(ModelConfig)
OPENAI = {"provider": "openai", "base_url": "https://api.example.com/v1/", "model": "gpt-test"}


@pytest.mark.parametrize(
    ("data", "expected_type"),
    [
        (OPENAI, OpenAIModelConfig),
        ({"provider": "bedrock", "model_id": "amazon.nova-lite-v1:0"}, BedrockModelConfig),
        ({"provider": "scripted", "script": "scripts/demo.yaml"}, ScriptedModelConfig),
    ],
)
def test_the_provider_field_selects_the_config_type(data: dict[str, Any], expected_type: type) -> None:
    # Given a model entry, when it is validated, then its provider picks the type
    assert isinstance(MODEL_CONFIG.validate_python(data), expected_type)


def test_a_misspelled_field_is_an_error_naming_it() -> None:
    # Given an OpenAI entry with a typo
    data = {**OPENAI, "api_kye": "sk-x"}
    # When it is validated, then the error names the misspelled field
    with pytest.raises(ValidationError, match=r"api_kye\s+Extra inputs are not permitted"):
        MODEL_CONFIG.validate_python(data)


def test_base_url_must_be_http_and_loses_its_trailing_slash() -> None:
    # Given a valid URL with a trailing slash, then it is kept without the slash
    assert MODEL_CONFIG.validate_python(OPENAI).base_url == "https://api.example.com/v1"
    # And given a URL of another scheme, then validation fails on base_url
    with pytest.raises(ValidationError, match=r"base_url\s+Value error, must be an http"):
        MODEL_CONFIG.validate_python({**OPENAI, "base_url": "ftp://api.example.com"})


def test_timeout_must_be_positive() -> None:
    # Given a zero timeout, when validated, then the error names timeout_seconds
    with pytest.raises(ValidationError, match=r"timeout_seconds\s+Input should be greater than 0"):
        MODEL_CONFIG.validate_python({**OPENAI, "timeout_seconds": 0})


def test_the_api_key_is_not_in_the_repr() -> None:
    # Given a config with a key, when it is printed, then the key is not shown
    config = MODEL_CONFIG.validate_python({**OPENAI, "api_key": "sk-very-secret"})
    assert "sk-very-secret" not in repr(config)


@pytest.mark.parametrize(
    "data",
    [
        {"provider": "scripted"},
        {"provider": "scripted", "script": "a.yaml", "scenarios": [{"turns": [{"content": "x"}]}]},
    ],
    ids=["neither", "both"],
)
def test_a_scripted_model_needs_exactly_one_source(data: dict[str, Any]) -> None:
    # Given a scripted entry with no source or two, when validated, then it is refused
    with pytest.raises(ValidationError, match="exactly one of 'script'"):
        MODEL_CONFIG.validate_python(data)
