"""Scripted runs through the local engine, measured: wall time, model and tool time, state events, DynamoDB."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.asl import StateEvent
from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi, example_tools_config


def scripted_config(iterations: int, api_url: str, *, model_latency_ms: int = 0) -> dict[str, Any]:
    """A profile whose scripted model calls `get_weather` `iterations - 1` times, then answers."""
    action = json.dumps({"action": "get_weather", "action_input": {"city": "Paris"}})
    answer = json.dumps({"action": "Final Answer", "action_input": "done"})
    turns = [{"content": f"Thought: check.\n```json\n{action}\n```", "latency_ms": model_latency_ms}] * (iterations - 1)
    turns.append({"content": f"Thought: done.\n```json\n{answer}\n```", "latency_ms": model_latency_ms})
    return {
        "models": {"scripted": {"provider": "scripted", "scenarios": [{"turns": turns}]}},
        "tools": {"apis": [example_tools_config(api_url)]},
        "profiles": {
            # one call per iteration, as the script makes: the execution-history bound then admits 100 iterations
            "default": {
                "model": "scripted",
                "strategy": "react",
                "limits": {"max_iterations": iterations + 1, "max_parallel_calls": 1},
            }
        },
    }


@dataclass
class EventLog:
    """Collects the engine's state events (a listener)."""

    events: list[StateEvent] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: StateEvent) -> None:
        with self._lock:
            self.events.append(event)

    def clear(self) -> None:
        """Forget the events seen so far."""
        with self._lock:
            self.events.clear()


@dataclass
class RunFigures:
    """What one measured run cost."""

    iterations: int
    wall_ms: float
    model_ms: int
    tool_ms: int
    dynamodb_calls: int
    dynamodb_bytes_written: int
    dynamodb_bytes_read: int
    dynamodb_ms: float
    dynamodb_calls_by_operation: dict[str, int]
    state_transitions: int
    lambda_invocations: int
    task_ms: dict[str, float]
    payload_bytes: dict[str, list[int]]

    @property
    def overhead_per_iteration_ms(self) -> float:
        """Wall time not spent in the model or tools, per iteration."""
        return (self.wall_ms - self.model_ms - self.tool_ms) / self.iterations

    @property
    def overhead_without_store_ms(self) -> float:
        """The same, less the time spent waiting on the (embedded, emulated) DynamoDB endpoint."""
        return self.overhead_per_iteration_ms - self.dynamodb_ms / self.iterations


class Bench:
    """One local environment with a scripted model of a fixed number of iterations, measured at the wire."""

    def __init__(self, environment: LocalEnvironment, log: EventLog, meter: DynamoDBMeter) -> None:
        self.environment = environment
        self.log = log
        self.meter = meter

    def run(self) -> RunFigures:
        """Create and execute one run; figures from its usage, its state events and the DynamoDB meter."""
        self.log.clear()
        self.meter.reset()
        started = time.perf_counter()
        meta = self.environment.create_run("weather?")
        self.environment.execute(meta.run_id)
        wall_ms = (time.perf_counter() - started) * 1000
        final = self.environment.runtime.store.require_run(meta.run_id)
        entered: dict[tuple[str, int | None], float] = {}
        task_ms: dict[str, float] = {}
        payload_bytes: dict[str, list[int]] = {}
        for event in self.log.events:
            key = (event.state, event.map_index)
            if event.type == "entered":
                entered[key] = event.timestamp.timestamp()
            elif event.type == "exited" and key in entered:
                task_ms[event.state] = (
                    task_ms.get(event.state, 0.0) + (event.timestamp.timestamp() - entered[key]) * 1000
                )
                payload_bytes.setdefault(event.state, []).append(len(json.dumps(event.output)))
        return RunFigures(
            iterations=final.iteration,
            wall_ms=wall_ms,
            model_ms=final.usage.llm_ms,
            tool_ms=final.usage.tool_ms,
            dynamodb_calls=self.meter.total_calls,
            dynamodb_bytes_written=self.meter.bytes_written,
            dynamodb_bytes_read=self.meter.bytes_read,
            dynamodb_ms=self.meter.seconds * 1000,
            dynamodb_calls_by_operation=dict(self.meter.calls),
            state_transitions=sum(1 for event in self.log.events if event.type == "entered"),
            lambda_invocations=sum(
                1 for event in self.log.events if event.type == "exited" and event.state in _TASK_STATES
            ),
            task_ms=task_ms,
            payload_bytes=payload_bytes,
        )


_METER = DynamoDBMeter()
_TASK_STATES = frozenset({"IterationGuard", "LLMCall", "Parse", "InvokeTool", "Format", "FormatFailure"})


@contextmanager
def bench_for(iterations: int, *, model_latency_ms: int = 0) -> Iterator[Bench]:
    """A warmed-up Bench whose runs take `iterations` iterations."""
    if not _METER.installed:
        _METER.install()
    log = EventLog()
    with ExampleToolApi() as api, tempfile.TemporaryDirectory() as config_dir:
        config = scripted_config(iterations, api.url, model_latency_ms=model_latency_ms)
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with LocalEnvironment(config_dir=Path(config_dir), retry_interval_scale=0.0, listener=log) as environment:
            bench = Bench(environment, log, _METER)
            bench.run()
            yield bench


def percentile(values: list[float], fraction: float) -> float:
    """The value below which `fraction` of `values` fall (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]
