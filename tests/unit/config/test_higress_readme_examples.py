"""The Higress ai-agent README examples, Chinese and English, load as written (tests/fixtures/higress).

Each README has one full plugin configuration and two ``jsonResp`` fragments the README adds "to the above
configuration"; the Chinese one writes the response schema as YAML text (``jsonSchema: |``), the English one
as a YAML mapping.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepwise.config.loading import LoadedConfig, read_config_file
from stepwise.errors import ConfigError
from stepwise.tools import build_tool_registry

HIGRESS = Path(__file__).resolve().parents[2] / "fixtures" / "higress"
LANGUAGES = ["zh", "en"]


def example(language: str, *fragments: str) -> str:
    """The README's configuration example with ``fragments`` added below it, as the README says to."""
    folder = HIGRESS / f"ai-agent-readme-{language}"
    return "".join((folder / name).read_text(encoding="utf-8") for name in ("agent.yaml", *fragments))


def loaded(tmp_path: Path, text: str) -> LoadedConfig:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return read_config_file(path)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_readme_configuration_loads_with_its_tools(tmp_path: Path, language: str) -> None:
    # Given the README's configuration example as written
    # When it is loaded and its tools are built
    config = loaded(tmp_path, example(language))
    registry = build_tool_registry(config.config.tools, config_dir=tmp_path)
    registry.close()
    # Then it is read as a Higress agent speaking the README's language, with the four tools of its three APIs
    assert config.kind == "higress-ai-agent"
    assert config.config.profiles["default"].language == "zh"
    assert registry.names() == ["get_location_coordinate", "search_nearby_pois", "get_weather_now", "translateText"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_json_resp_without_a_schema_asks_for_a_json_object(tmp_path: Path, language: str) -> None:
    # Given the example with the README's jsonResp fragment added
    # When it is loaded
    config = loaded(tmp_path, example(language, "json-resp.yaml"))
    # Then the answer is a JSON object of the model's making
    assert config.config.profiles["default"].response_schema == {"type": "object"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_readmes_json_schema_loads_as_yaml_text_or_as_a_mapping(tmp_path: Path, language: str) -> None:
    # Given the example with the README's custom schema (YAML text in Chinese, a mapping in English)
    # When it is loaded
    schema = loaded(tmp_path, example(language, "json-resp-schema.yaml")).config.profiles["default"].response_schema
    # Then the answer follows that schema, closed as the README closes it
    assert schema is not None
    assert (schema["title"], schema["required"], schema["additionalProperties"]) == (
        "WeatherSchema",
        ["location", "weather", "temperature"],
        False,
    )
    assert set(schema["properties"]) == {"location", "weather", "temperature", "update_time"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_json_resp_fragment_alone_is_explained_in_one_line(language: str) -> None:
    # Given the README's jsonResp fragment on its own
    fragment = HIGRESS / f"ai-agent-readme-{language}" / "json-resp-schema.yaml"
    # When it is loaded as a configuration
    with pytest.raises(ConfigError) as error:
        read_config_file(fragment)
    # Then one line says what it is and what it needs
    assert str(error.value) == (
        f"{fragment}: this is a Higress ai-agent fragment (jsonResp:); a configuration needs llm: and apis: "
        "beside it: add it to the plugin configuration it belongs to, as the Higress README does"
    )


def test_a_json_schema_written_as_json_text_is_read(tmp_path: Path) -> None:
    # Given the schema written as JSON text, as Higress articles do
    text = example("en") + 'jsonResp:\n  enable: true\n  jsonSchema: \'{"type": "object", "required": ["city"]}\'\n'
    # When it is loaded / Then the profile answers in that schema
    schema = loaded(tmp_path, text).config.profiles["default"].response_schema
    assert schema == {"type": "object", "required": ["city"]}


def test_a_json_schema_text_that_is_neither_json_nor_yaml_names_the_field(tmp_path: Path) -> None:
    # Given a schema text that no parser reads
    text = example("en") + "jsonResp:\n  enable: true\n  jsonSchema: |\n    type: [object\n"
    # When it is loaded / Then the error names the field and the line
    with pytest.raises(ConfigError, match=r"jsonResp.jsonSchema is text that is neither JSON nor YAML at line 2"):
        loaded(tmp_path, text)


def test_an_llm_block_without_apis_is_explained_as_a_fragment_too(tmp_path: Path) -> None:
    # Given the README's llm block alone
    llm_only = example("en").split("promptTemplate:")[0]
    # When it is loaded / Then the one line names what it has and what it needs
    with pytest.raises(
        ConfigError, match=r"this is a Higress ai-agent fragment \(llm:\); a configuration needs llm: and apis:"
    ):
        loaded(tmp_path, llm_only)
