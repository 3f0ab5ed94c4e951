"""What the model reads back from an HTTP tool: compact JSON, capped text, described binary, failures."""

from __future__ import annotations

import pytest

from stepwise.tools import ToolInvoker
from tests.support.tool_server import Binary, Hang, HugeBody, Json, Reset, ScriptableToolServer, Status
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint


def fetching_invoker(make_invoker: MakeInvoker, tool_server: ScriptableToolServer, budget_ms: int) -> ToolInvoker:
    """An invoker whose tool ``fetch`` calls GET /api/resource on the tool server within `budget_ms`."""
    tools = [endpoint("fetch", "/resource")]
    return make_invoker(
        {"apis": [api_entry(f"{tool_server.url}/api", tools, maxExecutionTime=budget_ms, maxResponseBytes=1000)]},
        max_observation_chars=5000,
    )


@pytest.fixture
def invoker(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> ToolInvoker:
    """The tool with a budget no loopback answer misses, however busy the machine (a 300 ms one did)."""
    return fetching_invoker(make_invoker, tool_server, budget_ms=10_000)


def test_a_json_answer_is_passed_on_compactly(invoker: ToolInvoker, tool_server: ScriptableToolServer) -> None:
    # Given the API answers pretty-printed JSON
    tool_server.on("/api/resource", Json({"city": "Paris", "temps": [14, 15], "note": "café"}))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation is the same document without the spacing, non-ASCII kept as is
    assert observation.ok
    assert observation.status_code == 200
    assert observation.content == '{"city":"Paris","temps":[14,15],"note":"café"}'


def test_a_server_error_becomes_a_failed_observation_with_the_status_and_body(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers 500 with an explanation
    tool_server.on("/api/resource", Status(500, "database unavailable"))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation says it failed, with the status and what the server said
    assert not observation.ok
    assert observation.status_code == 500
    assert observation.error == "HTTP 500 Internal Server Error"
    assert observation.content == "Error: HTTP 500 Internal Server Error: database unavailable"


def test_a_not_found_is_a_failed_observation_too(invoker: ToolInvoker, tool_server: ScriptableToolServer) -> None:
    # Given the API answers 404
    tool_server.on("/api/resource", Json({"error": "no such resource"}, status=404))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the model learns the status and the server's message
    assert (observation.ok, observation.status_code) == (False, 404)
    assert '{"error":"no such resource"}' in observation.content


def test_a_server_that_does_not_answer_in_time_gives_a_timeout_observation(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API hangs far longer than the tool's 300 ms budget
    invoker = fetching_invoker(make_invoker, tool_server, budget_ms=300)
    tool_server.on("/api/resource", Hang(10))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation reports the timeout with the configured budget
    assert not observation.ok
    assert observation.error == "timed out after 0.3 s"
    assert observation.status_code is None


def test_a_reset_connection_gives_an_observation_saying_so(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API resets the connection instead of answering
    tool_server.on("/api/resource", Reset())

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation says the connection was reset
    assert not observation.ok
    assert observation.error is not None and "reset or closed by the server" in observation.error


def test_a_refused_connection_gives_an_observation_saying_so(make_invoker: MakeInvoker) -> None:
    # Given an API on a port nothing listens on any more
    with ScriptableToolServer() as gone:
        url = gone.url
    invoker = make_invoker({"apis": [api_entry(url, [endpoint("fetch", "/resource")])]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation says the connection could not be made
    assert not observation.ok
    assert observation.error is not None and observation.error.startswith(f"could not connect to {url}")


def test_an_oversized_body_is_cut_at_the_cap_with_a_marker(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers a megabyte while the API's cap is 1000 bytes
    tool_server.on("/api/resource", HugeBody(size=1_000_000))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the model gets the first 1000 bytes and a marker saying there was more
    assert observation.ok and observation.truncated
    assert observation.content == "x" * 1000 + "…[truncated: the response was longer than 1000 bytes]"


def test_a_binary_body_is_described_not_dumped(invoker: ToolInvoker, tool_server: ScriptableToolServer) -> None:
    # Given the API answers with bytes that are not text
    tool_server.on("/api/resource", Binary(data=b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01", content_type="image/png"))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation describes the body in one line
    assert observation.ok
    assert observation.content == "[binary response: 12 bytes of image/png, not shown]"


def test_undecodable_bytes_labelled_as_text_are_described_as_binary(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API claims text but sends bytes that are not UTF-8
    tool_server.on("/api/resource", Binary(data=b"\xff\xfe\xfa\x00garbage", content_type="text/plain"))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then nothing undecodable reaches the model
    assert observation.content == "[binary response: 11 bytes of text/plain, not shown]"


def test_a_long_observation_is_cut_to_the_invoker_limit_with_the_number_of_chars_dropped(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API answering 10 000 characters and an invoker limited to 4000
    tool_server.on("/api/resource", HugeBody(size=10_000))
    invoker = make_invoker({"apis": [api_entry(f"{tool_server.url}/api", [endpoint("fetch", "/resource")])]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation is exactly 4000 characters and says how much it left out
    assert observation.truncated
    assert len(observation.content) == 4000
    assert observation.content.endswith("…[truncated 6023 chars]")


@pytest.mark.parametrize("status", [200, 204])
def test_a_success_without_a_body_says_so(invoker: ToolInvoker, tool_server: ScriptableToolServer, status: int) -> None:
    # Given the API answers a success with an empty body
    tool_server.on("/api/resource", Status(status, ""))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the observation says the call succeeded and nothing came back, rather than being empty
    assert (observation.ok, observation.status_code) == (True, status)
    assert observation.content.startswith(f"HTTP {status} ")
    assert "the request succeeded; the response has no body" in observation.content
