"""Tool configuration: the Higress ai-agent shape is accepted as is, and mistakes are named precisely."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from stepwise.config.tool_sources import ToolsConfig, parse_tools_config
from stepwise.errors import ConfigError
from tests.unit.tools.config_builders import api_entry, endpoint, string_properties

WEATHER_URL = "https://api.example.com/v1"


def weather_api(**overrides: Any) -> dict[str, Any]:
    tool = endpoint("get_weather", "/weather/{city}", string_properties("city", "units"))
    tool["parameter"]["required"] = ["city"]
    return api_entry(WEATHER_URL, [tool], **overrides)


def test_the_documented_example_is_accepted_with_its_camel_case_keys() -> None:
    # Given the example from the configuration reference
    raw = {
        "apis": [
            weather_api(
                apiKey={"in": "header", "name": "X-API-Key", "value": "ssm:/stepwise/weather"},
                maxExecutionTime=5000,
                internal=False,
                maxResponseBytes=65536,
            )
        ],
        "builtin": ["current_time", "calculator"],
        "python": ["my_tools"],
    }

    # When it is parsed
    config = parse_tools_config(raw)

    # Then every key landed where it belongs
    api = config.apis[0]
    assert api.url == WEATHER_URL
    assert api.api_key is not None and (api.api_key.location, api.api_key.name) == ("header", "X-API-Key")
    assert (api.max_execution_time, api.internal, api.max_response_bytes) == (5000, False, 65536)
    assert api.tools[0].tool_name == "get_weather" and api.tools[0].method == "GET"
    assert config.builtin == ["current_time", "calculator"] and config.python == ["my_tools"]


def test_snake_case_keys_are_accepted_too() -> None:
    # Given the same API written with snake_case keys
    raw = {
        "apis": [
            {
                "url": WEATHER_URL,
                "max_execution_time": 2500,
                "tools": [{"tool_name": "ping", "method": "post", "path": "/ping"}],
            }
        ]
    }

    # When it is validated directly
    config = ToolsConfig.model_validate(raw)

    # Then the values are read, and the method is normalised to upper case
    assert config.apis[0].max_execution_time == 2500
    assert config.apis[0].tools[0].method == "POST"


def test_a_path_placeholder_missing_from_the_parameters_names_api_tool_and_placeholder() -> None:
    # Given a path with {town} while the schema only declares city
    api = weather_api()
    api["tools"][0]["path"] = "/weather/{town}"

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]}, source="config/tools.yaml")

    # Then the message names the file, the API, the tool and the placeholder
    message = str(raised.value)
    assert message.startswith("config/tools.yaml:")
    assert f"api {WEATHER_URL}" in message
    assert "tool get_weather" in message
    assert "{town}" in message


def test_an_invalid_tool_name_names_the_field_and_the_rule() -> None:
    # Given a tool name with a space
    api = weather_api()
    api["tools"][0]["toolName"] = "get weather"

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the error points at that tool's toolName
    assert f"api {WEATHER_URL} > tool get weather > toolName" in str(raised.value)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://files.example.com", "must use http or https"),
        ("https://user:pw@api.example.com", "must not hold credentials"),
        ("https://api.example.com/v1?x=1", "must not hold a query"),
        ("https:///v1", "has no host"),
    ],
)
def test_a_base_url_that_is_not_a_plain_http_origin_is_refused(url: str, reason: str) -> None:
    # Given an API whose url is not a plain http(s) base URL
    api = weather_api()
    api["url"] = url

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the reason is given
    assert reason in str(raised.value)


def test_a_tool_name_used_by_two_apis_is_refused() -> None:
    # Given two APIs that both define get_weather
    first = weather_api()
    second = weather_api()
    second["url"] = "https://other.example.com"

    # When they are parsed together
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [first, second]})

    # Then the message names the tool and where it was first defined
    assert "tool get_weather: toolName is already used by api https://api.example.com/v1" in str(raised.value)


def test_a_builtin_with_the_name_of_an_http_tool_is_refused() -> None:
    # Given an API tool named calculator and the built-in calculator enabled
    api = api_entry(WEATHER_URL, [endpoint("calculator", "/calc")])

    # When they are parsed together
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api], "builtin": ["calculator"]})

    # Then the clash is reported
    assert "builtin: tool calculator is already used by api" in str(raised.value)


def test_unknown_keys_are_refused_by_name() -> None:
    # Given a misspelt key on a tool
    api = weather_api()
    api["tools"][0]["methd"] = "GET"

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the misspelt key is named
    assert "tool get_weather > methd: Extra inputs are not permitted" in str(raised.value)


def test_a_header_api_key_needs_a_header_name() -> None:
    # Given an API key to send in a header without saying which header
    api = weather_api(apiKey={"in": "header", "value": "k-123456"})

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the missing name is reported
    assert "apiKey.name is required when apiKey.in is 'header'" in str(raised.value)


def test_a_literal_api_key_never_appears_in_validation_errors() -> None:
    # Given a literal key, and an invalid key placement in the same apiKey block
    literal_key = "sk-live-5d41402abc4b2a76"
    api = weather_api(apiKey={"in": "cookie", "name": "k", "value": literal_key})

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the error explains the placement but never shows the key
    assert "apiKey > in" in str(raised.value)
    assert literal_key not in str(raised.value)


def test_a_parameter_schema_that_is_not_a_json_schema_object_is_refused() -> None:
    # Given a tool whose parameter schema has an invalid type
    api = weather_api()
    api["tools"][0]["parameter"] = {"type": "object", "properties": {"city": {"type": "town"}}}

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the tool and the reason are named
    assert "tool get_weather: parameter is not a valid JSON schema" in str(raised.value)


def test_a_parameter_given_as_json_text_is_read_as_the_schema_it_holds() -> None:
    # Given a tool whose parameter is a JSON string, as the Higress articles write it in YAML
    api = weather_api()
    api["tools"][0]["parameter"] = (
        '{"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, '
        '"required": ["city"]}'
    )

    # When it is parsed
    tools = parse_tools_config({"apis": [api]})

    # Then the schema is the one the string holds
    assert tools.apis[0].tools[0].parameter["required"] == ["city"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("{type: object", "not JSON", id="not JSON"),
        pytest.param('["city"]', "JSON schema object", id="not an object"),
    ],
)
def test_a_parameter_string_that_holds_no_schema_is_refused_with_the_reason(text: str, reason: str) -> None:
    # Given a tool whose parameter string is not a JSON schema object
    api = weather_api()
    api["tools"][0]["parameter"] = text

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the field and the reason are named
    assert "parameter" in str(raised.value) and reason in str(raised.value)


def test_maximum_execution_time_is_bounded() -> None:
    # Given an API allowed ten minutes per call
    api = weather_api(maxExecutionTime=600_000)

    # When it is parsed
    with pytest.raises(ConfigError) as raised:
        parse_tools_config({"apis": [api]})

    # Then the field is named with its limit
    assert "maxExecutionTime: Input should be less than or equal to 60000" in str(raised.value)


def test_a_literal_api_key_is_not_shown_even_by_an_outer_model_that_shows_inputs() -> None:
    # Given a model embedding the tools config without hiding inputs, and an apiKey missing its name
    class Profile(BaseModel):
        tools: ToolsConfig

    literal_key = "sk-live-5d41402abc4b2a76"
    raw = {"tools": {"apis": [weather_api(apiKey={"in": "header", "value": literal_key})]}}

    # When it is validated
    with pytest.raises(ValidationError) as raised:
        Profile.model_validate(raw)

    # Then the error explains the problem without the key
    assert "apiKey.name is required" in str(raised.value)
    assert literal_key not in str(raised.value)


def test_an_mcp_server_given_by_command_is_a_stdio_server() -> None:
    # Given an MCP server configured by command, as the reference servers are
    server = {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}}

    # When it is parsed
    parsed = parse_tools_config({"mcp": [server]}).mcp[0]

    # Then it is run over stdio with its arguments and environment, and described by its command line
    assert (parsed.kind, parsed.args, parsed.env) == ("stdio", ["mcp-server-time"], {"TZ": "UTC"})
    assert parsed.describe() == "uvx mcp-server-time"
