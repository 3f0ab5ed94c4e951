"""``stepwise config check``: any configuration is validated and each profile's tools are printed."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp.server.mcpserver import MCPServer

from stepwise.cli import main
from tests.support.a2a_agent import ScriptedA2aAgent
from tests.support.mcp_server import LoopbackMcpServer
from tests.support.ports import refused_port

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openapi"
SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    """An MCP server with one tool, on loopback."""
    server = MCPServer("check", log_level="WARNING")

    @server.tool()
    def lookup_word(word: str) -> str:
        """Look a word up in the dictionary."""
        return word

    with LoopbackMcpServer(server) as running:
        yield running.url


def write(directory: Path, config: dict[str, Any], name: str = "stepwise.yaml") -> Path:
    """Write a configuration file and return its path."""
    path = directory / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def check(path: Path, *options: str) -> tuple[int, str]:
    """Run ``stepwise config check`` and return its exit code and standard output."""
    out = io.StringIO()
    code = main(["config", "check", str(path), *options], out=out)
    return code, out.getvalue()


def test_each_profile_lists_the_tools_of_every_source_as_the_model_sees_them(tmp_path: Path, mcp_url: str) -> None:
    # Given a configuration with an OpenAPI file, an MCP server and a built-in, and a restricted profile
    shutil.copy(FIXTURES / "weather-3.1.yaml", tmp_path)
    tools = {
        "openapi": [{"source": "weather-3.1.yaml", "baseUrl": "https://api.weather.example.com/v3"}],
        "mcp": [{"url": mcp_url, "internal": True}],
        "builtin": ["calculator"],
    }
    profiles = {"default": {"model": "m"}, "maths": {"model": "m", "tools": ["calculator"]}}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": profiles})
    # When it is checked with --json
    code, output = check(path, "--json")
    # Then it is valid and each profile lists its tools, in configuration order
    report = json.loads(output)
    assert code == 0
    assert [tool["name"] for tool in report["profiles"]["default"]["tools"]] == [
        "get_weather_now",
        "get_weather_daily_json",
        "placeDetails",
        "subscribeAlerts",
        "lookup_word",
        "calculator",
    ]
    assert [tool["name"] for tool in report["profiles"]["maths"]["tools"]] == ["calculator"]


def test_two_mcp_servers_offering_one_tool_name_are_refused_naming_both_and_the_fix(
    tmp_path: Path, mcp_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two MCP entries whose servers both offer lookup_word
    tools = {"mcp": [{"url": mcp_url, "internal": True}, {"url": mcp_url, "internal": True}]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When the configuration is checked
    code, _ = check(path)
    # Then it is refused, naming both sources and the settings that would resolve the clash
    assert code == 1
    assert capsys.readouterr().err == (
        f"stepwise config check: mcp {mcp_url}: tool lookup_word is already defined by mcp {mcp_url}; give one of "
        "the MCP servers a prefix: (for all its tools) or a rename: of this one\n"
    )


def test_a_prefix_combines_two_mcp_servers_offering_one_tool_name(tmp_path: Path, mcp_url: str) -> None:
    # Given the same two entries, the second with a prefix and the first renaming its tool
    tools = {
        "mcp": [
            {"url": mcp_url, "internal": True, "rename": {"lookup_word": "define"}},
            {"url": mcp_url, "internal": True, "prefix": "thesaurus_"},
        ]
    }
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When the configuration is checked
    code, output = check(path, "--json")
    # Then both are offered, each under its own name
    assert code == 0
    assert [tool["name"] for tool in json.loads(output)["profiles"]["default"]["tools"]] == [
        "define",
        "thesaurus_lookup_word",
    ]


def test_the_printed_tool_shows_its_name_description_and_schema(tmp_path: Path, mcp_url: str) -> None:
    # Given a configuration whose only tool comes from the MCP server
    tools = {"mcp": [{"url": mcp_url, "internal": True}]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked
    code, output = check(path)
    # Then the output names the profile, then the tool with its description and its JSON schema
    assert code == 0
    assert f"{path}: a valid Stepwise configuration" in output
    assert "profile default (model m, the default): 1 tool" in output
    assert "\n  lookup_word\n    Look a word up in the dictionary.\n    parameters: {\n" in output
    assert '"required": [\n        "word"\n      ]' in output


def test_an_a2a_agent_is_shown_as_the_tool_its_card_makes(tmp_path: Path) -> None:
    agent = ScriptedA2aAgent()
    with agent.serving() as url:
        # Given a configuration with an A2A agent on loopback
        tools = {"a2a": [{"url": url, "internal": True}]}
        path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
        # When it is checked
        code, output = check(path, "--json")
    # Then the profile offers the agent as one tool, named and described by its card, taking a message
    [tool] = json.loads(output)["profiles"]["default"]["tools"]
    assert code == 0
    assert (tool["name"], tool["description"].splitlines()[0]) == (
        "Weather_Oracle",
        "Answers questions about the weather anywhere.",
    )
    assert list(tool["parameters"]["properties"]) == ["message"]


def test_a_higress_ai_agent_configuration_is_accepted_as_it_is(tmp_path: Path) -> None:
    # Given a Higress ai-agent configuration with an OpenAPI document inline
    document = (FIXTURES / "weather-3.1.yaml").read_text(encoding="utf-8")
    api = document.replace("- url: /v3", "- url: https://api.seniverse.com/v3")
    agent = {
        "llm": {
            "apiKey": "sk-xxxxxxxx",
            "domain": "dashscope.aliyuncs.com",
            "serviceName": "dashscope.dns",
            "servicePort": 443,
            "path": "/compatible-mode/v1/chat/completions",
            "model": "qwen-max-0403",
        },
        "promptTemplate": {"language": "EN"},
        "apis": [
            {
                "apiProvider": {
                    "domain": "api.seniverse.com",
                    "serviceName": "seniverse.dns",
                    "servicePort": 443,
                    "apiKey": {"in": "query", "name": "key", "value": "secretsmanager:seniverse#key"},
                },
                "api": api,
            }
        ],
    }
    path = write(tmp_path, agent, "ai-agent.yaml")
    # When it is checked
    code, output = check(path, "--json")
    # Then it is read as the plugin's shape, its tools are listed, and unused settings are noted
    report = json.loads(output)
    assert (code, report["kind"]) == (0, "higress-ai-agent")
    assert report["profiles"]["default"]["model"] == "higress"
    assert [tool["name"] for tool in report["profiles"]["default"]["tools"]][:2] == [
        "get_weather_now",
        "get_weather_daily_json",
    ]
    assert report["notes"] == []  # promptTemplate holds only its language, which is used


def test_a_document_that_cannot_be_imported_exits_non_zero_naming_the_operation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration importing the pet store, whose upload has only a file field, refusing what it cannot offer
    shutil.copy(FIXTURES / "petstore-3.0.yaml", tmp_path)
    tools = {"openapi": [{"source": "petstore-3.0.yaml", "onUnsupported": "fail"}]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked
    code, output = check(path)
    # Then it exits 1 with the configuration error on stderr and prints no tools
    assert (code, output) == (1, "")
    assert capsys.readouterr().err == (
        "stepwise config check: openapi petstore-3.0.yaml: operation uploadPhoto: the multipart body has only "
        "file fields (file), which a tool cannot send\n"
    )


def test_operations_left_out_of_an_import_are_listed_with_their_reason(tmp_path: Path) -> None:
    # Given a configuration importing the pet store with the default onUnsupported: skip
    shutil.copy(FIXTURES / "petstore-3.0.yaml", tmp_path)
    tools = {"openapi": [{"source": "petstore-3.0.yaml"}]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked
    code, output = check(path)
    # Then it is valid, and the upload is listed as skipped with the reason
    assert code == 0
    assert (
        "note: openapi petstore-3.0.yaml: skipped operation uploadPhoto: the multipart body has only file fields "
        "(file), which a tool cannot send"
    ) in output


def test_a_profile_naming_an_unknown_tool_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a profile that lists a tool nobody configured
    profiles = {"default": {"model": "m", "tools": ["calculater"]}}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": {"builtin": ["calculator"]}, "profiles": profiles})
    # When it is checked
    code, _ = check(path)
    # Then the error names the profile and the unknown tool
    assert code == 1
    assert capsys.readouterr().err == (
        f"stepwise config check: {path}: profiles.default.tools: unknown tool(s) calculater; "
        "configured tools: calculator\n"
    )


def test_a_file_that_is_not_yaml_exits_non_zero_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a file whose YAML ends in the middle of a flow sequence
    path = tmp_path / "broken.yaml"
    path.write_text("models:\n  m: {provider: [\n", encoding="utf-8")
    # When it is checked
    code, _ = check(path)
    # Then the error names the file and the line
    assert code == 1
    assert capsys.readouterr().err == f"stepwise config check: {path}: not valid YAML at line 3\n"


def test_a_missing_file_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a path with no file
    path = tmp_path / "absent.yaml"
    # When it is checked
    code, _ = check(path)
    # Then the error names the file and the reason
    assert code == 1
    assert capsys.readouterr().err == f"stepwise config check: {path}: cannot read: No such file or directory\n"


HIGRESS_AI_INTENT = Path(__file__).resolve().parents[2] / "fixtures" / "higress" / "ai-intent.yaml"


def test_a_higress_ai_intent_file_is_recognised_and_placed_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the ai-intent plugin's published example, as its own file
    path = tmp_path / "ai-intent.yaml"
    shutil.copy(HIGRESS_AI_INTENT, path)
    # When it is checked
    code, _ = check(path)
    # Then one line says it is a valid intent section and where it goes, instead of ai-agent field errors
    error = capsys.readouterr().err
    assert code == 1
    assert error.count("\n") == 1
    assert error.startswith(
        f"stepwise config check: {path}: a Higress ai-intent plugin configuration, valid as Stepwise's intent section: "
        "it goes as it is under intent: in a Stepwise configuration that has models: and profiles:"
    )


def test_an_invalid_ai_intent_file_is_placed_and_its_problem_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the example with its llm block's proxyUrl misspelt
    raw = yaml.safe_load(HIGRESS_AI_INTENT.read_text(encoding="utf-8"))
    raw["llm"]["proxyURL"] = raw["llm"].pop("proxyUrl")
    path = write(tmp_path, raw, "ai-intent.yaml")
    # When it is checked
    code, _ = check(path)
    # Then the one line says where it goes and names the misspelt field
    error = capsys.readouterr().err
    assert code == 1
    assert error.count("\n") == 1
    assert "a Higress ai-intent plugin configuration (it goes as it is under intent:" in error
    assert "llm.proxyURL" in error


def test_the_ai_intent_file_under_intent_is_a_valid_configuration(tmp_path: Path) -> None:
    # Given a Stepwise configuration with the ai-intent example as its intent section
    intent = yaml.safe_load(HIGRESS_AI_INTENT.read_text(encoding="utf-8"))
    config = {
        "models": {"m": {"provider": "openai", "base_url": "https://llm.example.com/v1", "model": "x"}},
        "profiles": {"default": {"model": "m"}},
        "intent": intent,
    }
    path = write(tmp_path, config)
    # When it is checked
    code, output = check(path, "--json")
    # Then it is accepted
    assert (code, json.loads(output)["kind"]) == (0, "stepwise")


def one_tool_api(url: str, **api: Any) -> dict[str, Any]:
    """An `apis:` entry at `url` with one GET tool."""
    return {"url": url, "tools": [{"toolName": "lookup", "path": "/lookup", "parameter": {"type": "object"}}], **api}


@pytest.mark.parametrize(
    ("tools", "field", "reason"),
    [
        pytest.param(
            {"apis": [one_tool_api("http://127.0.0.1:8080/v1")]}, "tools.apis.0.url", "a loopback address", id="api"
        ),
        pytest.param(
            {"apis": [one_tool_api("http://10.1.2.3")]}, "tools.apis.0.url", "a private address", id="private"
        ),
        pytest.param({"mcp": [{"url": "http://localhost:3000/mcp"}]}, "tools.mcp.0.url", "a loopback name", id="mcp"),
        pytest.param({"a2a": [{"url": "http://192.168.1.20"}]}, "tools.a2a.0.url", "a private address", id="a2a"),
        pytest.param(
            {"openapi": [{"source": "weather-3.1.yaml", "baseUrl": "http://169.254.169.254/v3"}]},
            "tools.openapi.0.baseUrl",
            "a link-local address",
            id="openapi baseUrl",
        ),
    ],
)
def test_a_tool_url_on_a_non_public_address_not_marked_internal_exits_non_zero_saying_how_to_mark_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tools: dict[str, Any], field: str, reason: str
) -> None:
    # Given a tool source whose URL is a loopback, private or link-local address, not marked internal
    shutil.copy(FIXTURES / "weather-3.1.yaml", tmp_path)
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked
    code, output = check(path)
    # Then it exits 1 before any tool is built, with one line naming the field, the reason and the mark
    error = capsys.readouterr().err
    assert (code, output) == (1, "")
    assert error.count("\n") == 1
    assert f"{field}: " in error and reason in error
    assert f"set {field.rsplit('.', 1)[0]}.internal: true" in error


def test_a_tool_url_on_a_loopback_address_marked_internal_is_accepted(tmp_path: Path) -> None:
    # Given an API on loopback marked internal
    tools = {"apis": [one_tool_api("http://127.0.0.1:8080/v1", internal=True)]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked, then it is valid
    assert check(path)[0] == 0


def test_an_openapi_document_whose_server_is_loopback_is_noted_with_how_to_mark_it(tmp_path: Path) -> None:
    # Given an inline OpenAPI document whose first server is on loopback, without baseUrl and not internal
    document = yaml.safe_load((FIXTURES / "weather-3.1.yaml").read_text(encoding="utf-8"))
    document["servers"] = [{"url": "http://127.0.0.1:8080/v3"}]
    tools = {"openapi": [{"document": document, "name": "weather"}]}
    path = write(tmp_path, {"models": {"m": SCRIPTED}, "tools": tools, "profiles": {"default": {"model": "m"}}})
    # When it is checked
    code, output = check(path)
    # Then it is valid (the document is someone else's), and a note says every call will be refused and why
    assert code == 0
    assert (
        "note: openapi weather: servers[0].url http://127.0.0.1:8080/v3 is a loopback address: every call will be "
        "refused; mark the source internal: true if it is meant to be reached, or set baseUrl"
    ) in output


def test_a_profile_whose_model_cannot_work_here_is_reported_and_the_file_still_passes(tmp_path: Path) -> None:
    # Given a valid file one of whose profiles is on an endpoint nothing listens on
    with refused_port() as port:
        remote = {"provider": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "x"}
        config = {
            "models": {"scripted": SCRIPTED, "remote": remote},
            "profiles": {"default": {"model": "scripted"}, "broken": {"model": "remote"}},
        }
        path = write(tmp_path, config)
        # When it is checked, as JSON and for a person
        code, output = check(path, "--json")
        _, text = check(path)
    # Then the file passes, and that profile alone is listed with its reason
    assert code == 0
    cannot_work = json.loads(output)["cannot_work"]
    assert list(cannot_work) == ["broken"] and f"127.0.0.1:{port} cannot be reached" in cannot_work["broken"]
    assert f"profile broken cannot work here: model 'remote' at http://127.0.0.1:{port}" in text
