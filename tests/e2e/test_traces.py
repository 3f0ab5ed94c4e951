"""One trace per run, as an operator sees it with `OTEL_TRACES_EXPORTER=console`: `stepwise run`, and
`stepwise serve` whose steps run in Lambda worker processes, each print spans that share one trace id,
rooted at what started the run, each carrying the run's id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.e2e.conftest import ConfigWriter, react_action, react_answer
from tests.support.approval_runs import PAYMENTS, poll
from tests.support.cli_process import stepwise_run_json
from tests.support.console_spans import PrintedSpan, printed_spans
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.ports import free_port

# A caller's own trace: the API request continues it.
CLIENT_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN_ID = "b7ad6b7169203331"
STEP_SPANS = {"IterationGuard", "LLMCall", "Parse", "ToolInvoke", "Format"}


def traced_environment(**more: str) -> dict[str, str]:
    """The caller's environment with the console exporter, spans exported as soon as they end."""
    return {**os.environ, "OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "50", **more}


def children(spans: list[PrintedSpan], parent: PrintedSpan) -> list[PrintedSpan]:
    return [span for span in spans if span.parent_id == parent.span_id]


def test_stepwise_run_prints_one_trace_rooted_at_the_command_with_the_run_id_on_every_span(
    write_config: ConfigWriter, dynamodb_local: str, unique_table_name: str
) -> None:
    # Given a scripted model that calls the calculator once, then answers
    model = {
        "provider": "scripted",
        "scenarios": [{"turns": [react_action("calculator", {"expression": "6*7"}), react_answer("42.")]}],
    }
    config_dir = write_config(model, builtin=["calculator"])
    # When `stepwise run --json` runs with OTEL_TRACES_EXPORTER=console
    completed = stepwise_run_json(
        "six times seven",
        config_dir,
        dynamodb_endpoint=dynamodb_local,
        table_name=unique_table_name,
        env=traced_environment(),
    )
    # Then stdout is the run alone, and the spans went to stderr
    assert completed.returncode == 0, completed.stderr[-3000:]
    run_id = json.loads(completed.stdout)["run_id"]
    spans = printed_spans(completed.stderr)
    # all in one trace, rooted at the command, and each carrying the run's id
    assert len({span.trace_id for span in spans}) == 1
    [root] = [span for span in spans if span.parent_id is None]
    assert root.name == "stepwise run"
    assert {span.attributes.get("stepwise.run_id") for span in spans} == {run_id}
    # with the run's start under the root, every step under the start, and the calls under their steps
    [start] = children(spans, root)
    assert (start.name, start.attributes["gen_ai.operation.name"]) == ("invoke_agent default", "invoke_agent")
    assert {span.name for span in children(spans, start)} == STEP_SPANS
    [tool] = [span for span in spans if span.name == "execute_tool calculator"]
    assert next(span.name for span in spans if span.span_id == tool.parent_id) == "ToolInvoke"
    assert [span.name for span in spans].count("chat m") == 2


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def _answered(url: str) -> bool:
    try:
        httpx.get(f"{url}/v1/models", headers={"x-api-key": "probe"}, timeout=2)
    except httpx.TransportError:
        return False
    return True


def test_serve_prints_one_trace_per_run_from_the_request_through_the_worker_processes(
    model: FakeOpenAIServer, dynamodb_local: str, unique_table_name: str, tmp_path: Path
) -> None:
    # Given `stepwise serve` with 2 Lambda worker processes, a tool that waits for approval, and spans
    # printed to its output with the process id of whoever printed them
    (tmp_path / "payments.py").write_text(PAYMENTS, encoding="utf-8")
    config = {
        "models": {
            "gpt": {"provider": "openai", "base_url": model.base_url, "model": "gpt-fake", "api_key": "sk-provider"}
        },
        "tools": {"python": [{"module": "payments", "requires_approval": True, "approval_timeout_seconds": 60}]},
        "profiles": {"assistant": {"model": "gpt", "strategy": "function_calling"}},
        "default_profile": "assistant",
    }
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    model.enqueue(
        body=chat_completion(tool_calls=[{"id": "call_1", "name": "transfer", "arguments": {"amount": 5, "to": "bob"}}])
    )
    model.enqueue(body=chat_completion(content="Sent."))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    output = (tmp_path / "serve.log").open("w+", encoding="utf-8")
    serve = subprocess.Popen(
        [
            *(sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port), "--workers", "2"),
            *("--config", str(tmp_path / "stepwise.yaml")),
            *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
        ],
        stdout=output,
        stderr=subprocess.STDOUT,
        env=traced_environment(OTEL_EXPERIMENTAL_RESOURCE_DETECTORS="process"),
    )
    try:
        deadline = time.monotonic() + 60
        while not _answered(url):
            assert serve.poll() is None and time.monotonic() < deadline, "stepwise serve did not start"
            time.sleep(0.2)
        # When a caller inside a trace of its own starts a run, approves its call, and the run ends
        with httpx.Client(base_url=url, headers={"x-api-key": "operator"}, timeout=30) as client:
            traceparent = f"00-{CLIENT_TRACE_ID}-{CLIENT_SPAN_ID}-01"
            accepted = client.post("/v1/runs", json={"input": "pay bob 5"}, headers={"traceparent": traceparent})
            run_id = accepted.json()["run_id"]
            assert (
                poll(client, run_id, lambda run: run["status"] in {"WAITING_APPROVAL", "FAILED"})["status"]
                == "WAITING_APPROVAL"
            )
            client.post(f"/v1/runs/{run_id}/approvals/call_1", json={"approved": True})
            ended = poll(client, run_id, lambda run: run["status"] in {"SUCCEEDED", "FAILED"})
            assert ended["status"] == "SUCCEEDED"
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
        output.seek(0)
        printed = output.read()
        output.close()
    # Then every span of the run is in the caller's trace, rooted at the API request, with the run's id
    spans = [span for span in printed_spans(printed) if span.attributes.get("stepwise.run_id") == run_id]
    assert {span.trace_id for span in spans} == {f"0x{CLIENT_TRACE_ID}"}
    [request] = [span for span in spans if span.parent_id == f"0x{CLIENT_SPAN_ID}"]
    assert (request.name, request.kind, request.attributes["http.response.status_code"]) == (
        "POST /v1/runs",
        "SpanKind.SERVER",
        202,
    )
    [start] = children(spans, request)
    steps = children(spans, start)
    assert {span.name for span in steps} == STEP_SPANS | {"AwaitApproval"}
    assert {"chat gpt-fake", "execute_tool transfer"} <= {span.name for span in spans}
    # And the steps were printed by the worker processes, not by the server that took the request
    server_pid = request.resource["process.pid"]
    assert {span.resource["process.pid"] for span in steps} - {server_pid}
    assert all(span.resource["process.pid"] != server_pid for span in steps if span.name == "LLMCall")
