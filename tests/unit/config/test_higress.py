"""A Higress ai-agent plugin configuration, read as a Stepwise configuration without changes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.higress import higress_to_stepwise, is_higress_agent_config
from stepwise.config.internal_targets import unmarked_internal_urls
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.support.tool_server import Json, ScriptableToolServer
from tests.unit.tools.config_builders import call

WEATHER_API = """
openapi: 3.1.0
info: {title: XZWeather, version: v1.0.0}
servers:
  - url: https://api.seniverse.com
paths:
  /v3/weather/now.json:
    get:
      description: Get weather conditions for a specified city
      operationId: get_weather_now
      parameters:
        - {name: location, in: query, required: true, schema: {type: string}}
"""

AGENT: dict[str, Any] = {
    "llm": {
        "apiKey": "sk-literal-llm-key",
        "domain": "dashscope.aliyuncs.com",
        "serviceName": "dashscope.dns",
        "servicePort": 443,
        "path": "/compatible-mode/v1/chat/completions",
        "model": "qwen-max-0403",
        "maxIterations": 2,
    },
    "promptTemplate": {"language": "EN"},
    "apis": [
        {
            "apiProvider": {
                "domain": "api.seniverse.com",
                "serviceName": "seniverse.dns",
                "servicePort": 80,
                "apiKey": {"in": "query", "name": "key", "value": "ssm:/agent/seniverse"},
            },
            "api": WEATHER_API,
        }
    ],
}


def agent(**changes: Any) -> dict[str, Any]:
    """The example agent with top-level keys replaced."""
    return {**copy.deepcopy(AGENT), **changes}


def test_the_llm_block_becomes_an_openai_compatible_model() -> None:
    # Given the plugin's llm block
    # When the configuration is converted
    model = higress_to_stepwise(agent()).config["models"]["higress"]
    # Then the model calls the domain and path the gateway called, with the same key and limits
    assert model == {
        "provider": "openai",
        "base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "model": "qwen-max-0403",
        "api_key": "sk-literal-llm-key",
        "timeout_seconds": 50.0,
        "max_tokens": 1000,
        "capabilities": {"native_tools": False, "parallel_tools": False, "stop_sequences": True},
    }


def test_the_default_profile_reasons_in_react_text_with_the_plugins_iteration_limit() -> None:
    # Given maxIterations 2
    # When the configuration is converted
    profile = higress_to_stepwise(agent()).config["profiles"]["default"]
    # Then the profile uses the Thought/Action protocol and the same limit
    assert profile == {
        "model": "higress",
        "strategy": "react",
        "protocol": "react_text",
        "limits": {"max_iterations": 2},
        "language": "en",
    }


def test_a_plugin_shaped_api_becomes_an_inline_openapi_source_with_its_query_key() -> None:
    # Given an apiProvider with a query key and its OpenAPI document as text
    # When the configuration is converted
    source = higress_to_stepwise(agent(), source="agent.yaml").config["tools"]["openapi"][0]
    # Then the document is inline, parsed, and the key goes in the query as the plugin sends it
    assert source["document"]["paths"]["/v3/weather/now.json"]["get"]["operationId"] == "get_weather_now"
    assert source["apiKey"] == {"in": "query", "name": "key", "value": "ssm:/agent/seniverse"}
    assert source["name"] == "agent.yaml apis[0] (XZWeather)"
    assert "baseUrl" not in source


@pytest.mark.parametrize(
    ("api_key", "expected"),
    [
        ({"in": "header", "name": "Auth-Key", "value": "k"}, {"in": "header", "name": "Auth-Key", "value": "k"}),
        ({"name": "X-Key", "value": "k"}, {"in": "header", "name": "X-Key", "value": "k"}),
        ({"in": "none"}, None),
        ({"in": "query", "name": "key", "value": ""}, None),
    ],
)
def test_api_keys_are_placed_as_the_plugin_places_them(api_key: dict[str, Any], expected: Any) -> None:
    # Given a provider key in one of the plugin's forms
    config = agent()
    config["apis"][0]["apiProvider"]["apiKey"] = api_key
    # When the configuration is converted
    source = higress_to_stepwise(config).config["tools"]["openapi"][0]
    # Then anything but query is a header, and no value means no key
    assert source.get("apiKey") == expected


def test_a_document_without_servers_is_called_on_the_providers_domain() -> None:
    # Given a document with no servers, served by a provider on port 80
    config = agent()
    config["apis"][0]["api"] = WEATHER_API.replace("servers:\n  - url: https://api.seniverse.com\n", "")
    # When the configuration is converted
    source = higress_to_stepwise(config).config["tools"]["openapi"][0]
    # Then the base URL is the provider's domain over http
    assert source["baseUrl"] == "http://api.seniverse.com"


def test_an_api_in_the_url_and_tools_shape_is_kept_as_it_is() -> None:
    # Given an API written as url + tools[]
    entry = {"url": "https://api.example.com", "tools": [{"toolName": "ping", "path": "/ping"}]}
    # When the configuration is converted
    tools = higress_to_stepwise(agent(apis=[entry])).config["tools"]
    # Then it is an `apis` entry as written
    assert tools == {"apis": [entry], "openapi": []}


def test_json_resp_becomes_the_profiles_response_schema() -> None:
    # Given jsonResp with a schema
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    # When the configuration is converted
    profile = higress_to_stepwise(agent(jsonResp={"enable": True, "jsonSchema": schema})).config["profiles"]["default"]
    # Then the profile answers in that schema
    assert profile["response_schema"] == schema


def test_json_resp_without_a_schema_asks_for_any_json_object() -> None:
    # Given jsonResp enabled without a schema
    # When the configuration is converted
    profile = higress_to_stepwise(agent(jsonResp={"enable": True})).config["profiles"]["default"]
    # Then the answer is a JSON object of the model's choosing
    assert profile["response_schema"] == {"type": "object"}


def test_a_prompt_template_with_only_a_language_leaves_no_note() -> None:
    # Given a promptTemplate that only names its language
    # When the configuration is converted
    notes = higress_to_stepwise(agent()).notes
    # Then nothing of it went unused
    assert notes == []


def test_prompt_templates_are_reported_as_unused() -> None:
    # Given a promptTemplate with the plugin's own English template
    template = {"language": "EN", "enTemplate": {"question": "input question to answer"}}
    # When the configuration is converted
    notes = higress_to_stepwise(agent(promptTemplate=template)).notes
    # Then a note says the templates are not used
    assert notes == [
        "promptTemplate templates is not used: Stepwise has its own ReAct prompts (promptTemplate.language is used)"
    ]


@pytest.mark.parametrize(("language", "expected"), [("CH", "zh"), ("EN", "en"), ("ch", "zh")])
def test_the_prompt_language_becomes_the_profiles_language(language: str, expected: str) -> None:
    # Given promptTemplate.language as the plugin spells it
    # When the configuration is converted
    profile = higress_to_stepwise(agent(promptTemplate={"language": language})).config["profiles"]["default"]
    # Then the profile speaks that language
    assert profile["language"] == expected


def test_the_converted_configuration_is_a_valid_stepwise_configuration() -> None:
    # Given the example agent
    # When it is converted and validated
    config = StepwiseConfig.from_mapping(higress_to_stepwise(agent()).config, source="agent.yaml")
    # Then it has the model, the tool source and the profile
    assert (list(config.models), len(config.tools.openapi), config.default_profile) == (["higress"], 1, "default")


def test_an_llm_path_that_is_not_chat_completions_is_refused() -> None:
    # Given an llm path to another endpoint
    config = agent()
    config["llm"]["path"] = "/api/v1/services/aigc/text-generation/generation"
    # When it is converted
    with pytest.raises(ConfigError) as error:
        higress_to_stepwise(config, source="agent.yaml")
    # Then the error names the file, the field and the rule
    assert str(error.value) == (
        "agent.yaml: llm.path: '/api/v1/services/aigc/text-generation/generation' must end with /chat/completions"
    )


def test_a_missing_field_and_an_unknown_key_are_named() -> None:
    # Given an llm block without a model, and a misspelt top-level key
    config = agent(apiz=[])
    del config["llm"]["model"]
    # When it is converted
    with pytest.raises(ConfigError) as error:
        higress_to_stepwise(config, source="agent.yaml")
    # Then both problems are named
    assert str(error.value) == "agent.yaml: llm.model: Field required; apiz: Extra inputs are not permitted"


def test_a_provider_document_that_is_not_yaml_names_the_api() -> None:
    # Given an api whose document is broken YAML
    config = agent()
    config["apis"][0]["api"] = "openapi: 3.1.0\npaths: {\n"
    # When it is converted
    with pytest.raises(ConfigError) as error:
        higress_to_stepwise(config, source="agent.yaml")
    # Then the error names the API entry
    assert str(error.value).startswith("openapi agent.yaml apis[0]: not valid JSON or YAML")


def test_the_literal_llm_key_never_appears_in_an_error() -> None:
    # Given an llm block whose key is fine but whose port is not
    config = agent()
    config["llm"]["servicePort"] = "https"
    # When it is converted
    with pytest.raises(ConfigError) as error:
        higress_to_stepwise(config)
    # Then the error names the port and shows no input
    assert "llm.servicePort" in str(error.value)
    assert "sk-literal-llm-key" not in str(error.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(AGENT, True), ({"models": {}, "llm": {}}, False), ({"apis": []}, False), (["llm"], False)],
)
def test_a_higress_configuration_is_recognised_by_its_llm_block(raw: Any, expected: bool) -> None:
    # Given parsed YAML of some shape
    # When it is classified
    # Then only a mapping with llm and without models is the plugin's
    assert is_higress_agent_config(raw) is expected


@pytest.mark.parametrize(
    ("port", "protocol", "base_url"),
    [
        (443, None, "https://llm.example.com/v1"),
        (80, None, "http://llm.example.com/v1"),
        (8080, "http", "http://llm.example.com:8080/v1"),
        (8443, "HTTPS", "https://llm.example.com:8443/v1"),
        (443, "http", "http://llm.example.com:443/v1"),
    ],
)
def test_the_llm_scheme_is_the_ports_or_the_one_protocol_states(port: int, protocol: str | None, base_url: str) -> None:
    # Given an llm block on a port, with or without Stepwise's protocol field
    config = agent()
    config["llm"] |= {"domain": "llm.example.com", "servicePort": port, "path": "/v1/chat/completions"}
    if protocol is not None:
        config["llm"]["protocol"] = protocol
    # When the configuration is converted
    model = higress_to_stepwise(config).config["models"]["higress"]
    # Then 443 is https, 80 is http, and a stated protocol wins, the port kept when it is not the scheme's own
    assert model["base_url"] == base_url


def test_an_llm_on_another_port_without_a_protocol_is_refused_at_load_saying_how_to_state_it() -> None:
    # Given an llm block on port 8080, which Higress would reach over whatever its service registry says
    config = agent()
    config["llm"]["servicePort"] = 8080
    # When it is converted
    with pytest.raises(ConfigError) as error:
        higress_to_stepwise(config, source="agent.yaml")
    # Then one error names the block and the port, and says how to state the scheme
    message = str(error.value)
    assert message.startswith("agent.yaml: llm: servicePort 8080 does not say whether the service speaks http or https")
    assert "add protocol: http or protocol: https to the block" in message


def test_an_api_provider_called_on_another_port_needs_its_protocol_too() -> None:
    # Given an API whose document has no servers, on a provider at port 9000
    config = agent()
    config["apis"][0]["api"] = WEATHER_API.replace("servers:\n  - url: https://api.seniverse.com\n", "")
    config["apis"][0]["apiProvider"]["servicePort"] = 9000
    # When it is converted without a protocol, then the API entry is named
    with pytest.raises(ConfigError, match=r"agent.yaml apis\[0\]: apiProvider: servicePort 9000"):
        higress_to_stepwise(config, source="agent.yaml")
    # And with one, its domain is called over it
    config["apis"][0]["apiProvider"]["protocol"] = "http"
    assert higress_to_stepwise(config).config["tools"]["openapi"][0]["baseUrl"] == "http://api.seniverse.com:9000"


def loopback_agent(server: ScriptableToolServer, **provider: Any) -> StepwiseConfig:
    """The example agent with its weather API served by `server` on loopback (a document without servers)."""
    config = agent()
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    config["apis"][0]["api"] = WEATHER_API.replace("servers:\n  - url: https://api.seniverse.com\n", "")
    config["apis"][0]["apiProvider"] |= {
        "domain": "127.0.0.1",
        "servicePort": port,
        "protocol": "http",
        "apiKey": {"in": "query", "name": "key", "value": "literal-weather-key"},
        **provider,
    }
    return StepwiseConfig.from_mapping(higress_to_stepwise(config).config, environ={})


def test_a_higress_api_on_loopback_marked_internal_is_called() -> None:
    with ScriptableToolServer(default=Json({"now": "sunny"})) as server:
        # Given a plugin-shaped API on 127.0.0.1 whose apiProvider says internal: true
        config = loopback_agent(server, internal=True)
        registry = build_tool_registry(config.tools, config_dir=Path("."))
        # When config check looks for unmarked private URLs, and the model calls the tool
        refused = unmarked_internal_urls(config.tools)
        observation = ToolInvoker(registry).invoke(call("get_weather_now", location="Paris"))
        registry.close()
    # Then nothing is refused, and the call reached the API
    assert refused == []
    assert observation.ok and [(request.path, request.query) for request in server.requests] == [
        ("/v3/weather/now.json", {"location": ["Paris"], "key": ["literal-weather-key"]})
    ]


def test_a_higress_api_on_loopback_not_marked_internal_is_reported_and_never_called() -> None:
    with ScriptableToolServer(default=Json({"now": "sunny"})) as server:
        # Given the same API without internal
        config = loopback_agent(server)
        registry = build_tool_registry(config.tools, config_dir=Path("."))
        # When config check looks, and the model calls the tool
        refused = unmarked_internal_urls(config.tools)
        observation = ToolInvoker(registry).invoke(call("get_weather_now", location="Paris"))
        registry.close()
    # Then the address is reported, and the call is refused before anything is sent
    assert len(refused) == 1 and "loopback" in refused[0]
    assert not observation.ok and server.requests == []
