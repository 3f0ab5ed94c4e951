"""The spans of `stepwise serve` as an OTLP receiver gets them, checked against OpenTelemetry's semantic
conventions v1.37.0 (HTTP server spans; GenAI agent, inference and tool spans): one serve, one receiver,
a streamed chat completion whose run calls the reference MCP time server over stdio, and a refused request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.ports import free_port

TIME_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


@dataclass(frozen=True)
class Served:
    """What the scenario left: every span received, the serve's and the model's ports, the status codes."""

    spans: list[ReceivedSpan]
    port: int
    model_port: int
    streamed_status: int
    refused_status: int


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/v1/models", headers={"x-api-key": "probe"}, timeout=2)
    except httpx.TransportError:
        return False
    return True


@pytest.fixture(scope="module")
def served(dynamodb_local: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`stepwise serve` exporting over OTLP/HTTP to a receiver, after a streamed chat completion whose run
    calls `get_current_time` on the MCP time server, and a `POST /v1/runs` refused 422; serve then stopped,
    so every span is exported."""
    tmp_path = tmp_path_factory.mktemp("otlp")
    with OtlpReceiver() as receiver, FakeOpenAIServer() as model:
        config = {
            "models": {
                "gpt": {"provider": "openai", "base_url": model.base_url, "model": "gpt-fake", "api_key": "sk-provider"}
            },
            "tools": {"mcp": [{**TIME_SERVER, "timeoutSeconds": 30}]},
            "profiles": {"assistant": {"model": "gpt", "strategy": "function_calling"}},
            "default_profile": "assistant",
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        call = {"id": "call_1", "name": "get_current_time", "arguments": {"timezone": "UTC"}}
        model.enqueue(body=chat_completion(tool_calls=[call]))
        model.enqueue(body=chat_completion(content="It is noon."))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        environment = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
        environment |= {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }
        serve = subprocess.Popen(
            [
                *(sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port), "--workers", "0"),
                *("--config", str(tmp_path / "stepwise.yaml")),
                *("--dynamodb-endpoint", dynamodb_local, "--table-name", f"otlp-{port}"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environment,
        )
        try:
            deadline = time.monotonic() + 60
            while not _answers(url):
                assert serve.poll() is None and time.monotonic() < deadline, "stepwise serve did not start"
                time.sleep(0.2)
            with httpx.Client(base_url=url, headers={"x-api-key": "operator"}, timeout=30) as client:
                question = {"model": "assistant", "messages": [{"role": "user", "content": "time?"}], "stream": True}
                with client.stream("POST", "/v1/chat/completions", json=question) as streamed:
                    chunks = [line for line in streamed.iter_lines() if line.startswith("data: ")]
                assert chunks[-1] == "data: [DONE]"
                answer = "".join(
                    (json.loads(chunk[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
                    for chunk in chunks[:-1]
                )
                assert answer == "It is noon."
                refused = client.post("/v1/runs", json={"input": 7})
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=60)
        yield Served(
            list(receiver.spans), port, urlsplit(model.base_url).port or 0, streamed.status_code, refused.status_code
        )


def only(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    [span] = [span for span in spans if span.name == name]
    return span


def run_spans(served: Served) -> tuple[str, list[ReceivedSpan]]:
    """The run's id, and every span of its trace."""
    start = only(served.spans, "invoke_agent assistant")
    return start.attributes["stepwise.run_id"], [span for span in served.spans if span.trace_id == start.trace_id]


def test_the_streamed_chats_server_span_says_what_the_client_got(served: Served) -> None:
    # Given a streamed chat completion the client received with 200
    assert served.streamed_status == 200
    run_id, spans = run_spans(served)
    # Then its SERVER span says 200, not an error, with the HTTP attributes the conventions require
    request = only(spans, "POST /v1/chat/completions")
    assert (request.kind, request.status) == ("SERVER", "UNSET")
    assert request.attributes | {"user_agent.original": None} == {
        "http.request.method": "POST",
        "http.route": "/v1/chat/completions",
        "url.path": "/v1/chat/completions",
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": served.port,
        "client.address": "127.0.0.1",
        "network.protocol.version": "1.1",
        "user_agent.original": None,
        "http.response.status_code": 200,
        "stepwise.run_id": run_id,
    }


def test_a_request_refused_422_has_a_server_span_that_is_not_an_error(served: Served) -> None:
    # Given a POST /v1/runs whose body the API refused with 422, before any route ran
    assert served.refused_status == 422
    # Then it has its SERVER span, with its status code; a 4xx is the client's, so the span's status stays
    # unset and it has no error.type (HTTP conventions: only a 5xx is a server span's error)
    [refused] = [span for span in served.spans if span.attributes.get("http.response.status_code") == 422]
    assert (refused.name, refused.kind, refused.status) == ("POST /v1/runs", "SERVER", "UNSET")
    assert "error.type" not in refused.attributes
    assert (refused.attributes["url.scheme"], refused.attributes["http.route"]) == ("http", "/v1/runs")


def test_the_agent_the_model_calls_and_the_tool_call_have_the_genai_attributes(served: Served) -> None:
    _, spans = run_spans(served)
    # Then invoke_agent names the provider and the model it asks
    start = only(spans, "invoke_agent assistant")
    assert {name: start.attributes.get(name) for name in ("gen_ai.provider.name", "gen_ai.request.model")} == {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-fake",
    }
    # And each chat CLIENT span the response's id, the model's server and the output type
    chats = [span for span in spans if span.name == "chat gpt-fake"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind == "CLIENT"
        assert {
            name: chat.attributes.get(name)
            for name in ("gen_ai.response.id", "server.address", "server.port", "gen_ai.output.type")
        } == {
            "gen_ai.response.id": "chatcmpl-fake",
            "server.address": "127.0.0.1",
            "server.port": served.model_port,
            "gen_ai.output.type": "text",
        }
    # And the MCP tool the agent ran itself is an `extension`
    tool = only(spans, "execute_tool get_current_time")
    assert (tool.kind, tool.attributes["gen_ai.tool.type"], tool.attributes["gen_ai.tool.call.id"]) == (
        "INTERNAL",
        "extension",
        "call_1",
    )


def test_every_span_of_the_run_carries_its_id_the_mcp_sdks_own_too(served: Served) -> None:
    run_id, spans = run_spans(served)
    # Then the MCP SDK's span of the tool call is in the run's trace, under the tool call's span
    tool = only(spans, "execute_tool get_current_time")
    mcp_call = only(spans, "MCP send tools/call get_current_time")
    assert (mcp_call.scope, mcp_call.parent_id) == ("mcp-python-sdk", tool.span_id)
    # And every span of the trace (ours, and the SDK's) carries the run's id
    assert {span.attributes.get("stepwise.run_id") for span in spans} == {run_id}
