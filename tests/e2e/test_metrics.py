"""The EMF metrics a run publishes, read from the handlers' output as CloudWatch would read it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import ConfigWriter, react_action, react_answer
from tests.support.cli_process import stepwise_run_json
from tests.support.emf_metrics import emitted, total

PRICES = {"input_per_million": 1.0, "output_per_million": 2.0}


def test_a_run_publishes_its_tokens_latencies_tool_failures_outcome_and_cost(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Given a priced model that calls the calculator with a division by zero, then answers
    model = {
        "provider": "scripted",
        "prices": PRICES,
        "scenarios": [
            {
                "turns": [
                    {
                        **react_action("calculator", {"expression": "1/0"}),
                        "usage": {"input_tokens": 60, "output_tokens": 40},
                    },
                    {**react_answer("It cannot be computed."), "usage": {"input_tokens": 30, "output_tokens": 20}},
                ]
            }
        ],
    }
    environment, _ = local_run(write_config(model, builtin=["calculator"]))
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    capfd.readouterr()
    # When a question is asked
    meta, _ = environment.ask("divide")
    metrics = emitted(capfd.readouterr().out)
    # Then the model calls' tokens, the failed tool call (by tool) and the run's outcome and cost are published
    assert meta.stop_reason == "final_answer"
    assert (total(metrics, "ModelInputTokens"), total(metrics, "ModelOutputTokens")) == (90, 60)
    assert [name for name, _, _ in metrics].count("ModelLatency") == 2
    assert (total(metrics, "ToolCalls", tool="calculator"), total(metrics, "ToolFailures", tool="calculator")) == (1, 1)
    assert [name for name, _, dims in metrics if dims.get("tool") == "calculator"].count("ToolLatency") == 1
    outcome = {"status": "SUCCEEDED", "stop_reason": "final_answer"}
    assert total(metrics, "Runs", **outcome) == 1
    assert (total(metrics, "RunInputTokens", **outcome), total(metrics, "RunOutputTokens", **outcome)) == (90, 60)
    assert total(metrics, "RunCostUSD", **outcome) == pytest.approx(0.00021)
    assert total(metrics, "RunIterations", **outcome) == 2


def test_run_json_with_metrics_on_prints_the_run_alone_on_stdout_and_its_emf_metrics_on_stderr(
    write_config: ConfigWriter, dynamodb_local: str, unique_table_name: str
) -> None:
    # Given a scripted model that calls the calculator once, then answers
    model = {
        "provider": "scripted",
        "scenarios": [{"turns": [react_action("calculator", {"expression": "6*7"}), react_answer("42.")]}],
    }
    config_dir = write_config(model, builtin=["calculator"])
    # When `stepwise run --json` runs as a user runs it, with the caller's POWERTOOLS_METRICS_DISABLED=false
    completed = stepwise_run_json(
        "six times seven",
        config_dir,
        dynamodb_endpoint=dynamodb_local,
        table_name=unique_table_name,
        env={**os.environ, "POWERTOOLS_METRICS_DISABLED": "false"},
    )
    # Then stdout is exactly the run as JSON (what `| jq` reads)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["answer"] == "42."
    # And the run's EMF metrics are on stderr: its iterations, its tool call and its outcome
    metrics = emitted(completed.stderr)
    assert total(metrics, "Iterations") == 2
    assert total(metrics, "ToolCalls", tool="calculator") == 1
    assert total(metrics, "Runs", status="SUCCEEDED", stop_reason="final_answer") == 1
