"""Orchestration overhead, DynamoDB calls and bytes written per iteration of scripted runs in the local engine.

Overhead is the run's wall time minus the time spent in the model and in tools (as the run's usage
records them): what the state machine, the handlers and the store cost per iteration.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi, example_tools_config

ITERATIONS = (1, 5, 10)
RUNS_PER_SIZE = 5


def _config(iterations: int, api_url: str) -> dict[str, Any]:
    action = json.dumps({"action": "get_weather", "action_input": {"city": "Paris"}})
    answer = json.dumps({"action": "Final Answer", "action_input": "done"})
    turns = [{"content": f"Thought: check.\n```json\n{action}\n```"}] * (iterations - 1)
    turns.append({"content": f"Thought: done.\n```json\n{answer}\n```"})
    return {
        "models": {"scripted": {"provider": "scripted", "scenarios": [{"turns": turns}]}},
        "tools": {"apis": [example_tools_config(api_url)]},
        "profiles": {
            "default": {"model": "scripted", "strategy": "react", "limits": {"max_iterations": iterations + 1}}
        },
    }


def measure(iterations: int, meter: DynamoDBMeter, api_url: str) -> dict[str, float]:
    """Run RUNS_PER_SIZE runs of `iterations` iterations; per-iteration figures."""
    with tempfile.TemporaryDirectory() as config_dir:
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(_config(iterations, api_url)))
        with LocalEnvironment(config_dir=Path(config_dir), retry_interval_scale=0.0) as environment:
            environment.ask("warm-up")
            overheads: list[float] = []
            meter.reset()
            for _ in range(RUNS_PER_SIZE):
                meta = environment.create_run("weather?")
                started = time.perf_counter()
                environment.execute(meta.run_id)
                wall_ms = (time.perf_counter() - started) * 1000
                usage = environment.runtime.store.require_run(meta.run_id).usage
                overheads.append((wall_ms - usage.llm_ms - usage.tool_ms) / iterations)
    per_run_iterations = RUNS_PER_SIZE * iterations
    return {
        "iterations": iterations,
        "overhead_median_ms": statistics.median(overheads),
        "overhead_max_ms": max(overheads),
        "dynamodb_calls": meter.total_calls / per_run_iterations,
        "bytes_written": meter.bytes_written / per_run_iterations,
    }


def main() -> None:
    """Print the table."""
    meter = DynamoDBMeter().install()
    with ExampleToolApi() as api:
        rows = [measure(iterations, meter, api.url) for iterations in ITERATIONS]
    print(f"Loop overhead per iteration ({RUNS_PER_SIZE} scripted runs per size, zero-latency model, local engine)")
    print(
        f"{'iterations/run':>14} {'overhead median ms':>19} {'overhead max ms':>16} "
        f"{'DynamoDB calls':>15} {'bytes written':>14}"
    )
    for row in rows:
        print(
            f"{row['iterations']:>14} {row['overhead_median_ms']:>19.1f} {row['overhead_max_ms']:>16.1f} "
            f"{row['dynamodb_calls']:>15.1f} {row['bytes_written']:>14.0f}"
        )
    print("(per iteration; a run's creation and its final Format are spread over its iterations)")
