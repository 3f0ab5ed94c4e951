"""A tool answering bytes that cannot be stored, or JSON past the limits, still gives an observation."""

from __future__ import annotations

import pytest

from stepwise.tools import ToolInvoker
from tests.support.tool_server import Raw, ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint


@pytest.fixture
def invoker(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> ToolInvoker:
    """An invoker whose tool ``fetch`` calls GET /api/resource on the tool server."""
    tools = [endpoint("fetch", "/resource")]
    return make_invoker(
        {"apis": [api_entry(f"{tool_server.url}/api", tools, maxExecutionTime=2000, maxResponseBytes=100_000)]},
        max_observation_chars=5000,
    )


def test_json_with_lone_surrogates_is_repaired_and_the_observation_says_so(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers JSON whose escapes decode to two lone surrogates
    tool_server.on("/api/resource", Raw(rb'{"name": "x\ud800y", "other": "\udfff"}'))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the call succeeded, each surrogate became U+FFFD, and a note counts them
    assert observation.ok
    assert observation.content.startswith('{"name":"x\ufffdy","other":"\ufffd"}')
    assert "[2 characters that cannot be encoded" in observation.content
    assert "\ud800" not in observation.content


def test_json_nested_past_the_depth_limit_is_shown_as_text_with_the_limit_named(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers arrays nested 5,000 deep
    tool_server.on("/api/resource", Raw(b"[" * 5_000 + b"]" * 5_000))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the model reads the text as it came (cut to the cap) and learns which limit it passed
    assert observation.ok
    assert "nests 5000 levels deep; the limit is 64" in observation.content


def test_text_with_a_nul_character_is_described_as_binary(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers text with a NUL in it
    tool_server.on("/api/resource", Raw(b"abc\x00def", content_type="text/plain"))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then no NUL reaches the observation
    assert observation.ok
    assert "\x00" not in observation.content
