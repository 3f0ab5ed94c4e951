"""Throughput of `stepwise serve`: a burst of concurrent runs over real HTTP, against the ideal wall time.

Each run takes 3 iterations with a scripted model that answers in 200 ms. The ideal is what the model's
latency alone would take with the local engine's execution slots all busy: ceil(runs / slots) waves of
3 x 200 ms. The server (API, Step Functions endpoint, engine) runs in this process, as `stepwise serve`
does, and the state machine's handlers in its Lambda worker processes (or in this process with 0 workers);
the clients and the tool API run in a child process (`load_client`), and DynamoDB Local in its own JVM.
One warm-up wave (a burst of `EXECUTION_SLOTS` runs) is run first and not counted: it pays the one-off
costs a long-running server pays once (the API function's instances being imported, the JVM compiling
DynamoDB Local's hot paths, the workers importing the handlers). CPU is the process CPU time taken during
the burst, per run: serve's counts its worker processes. The wall time runs from the first post to the
client's seeing every run ended (`load_client` polls them with a few requests in flight); the moment the
last run ended, as the server recorded it, is printed beside it.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.harness import scripted_config
from bench.load_client import BurstFigures, load_client
from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB
from stepwise.local.server import DEFAULT_LAMBDA_WORKERS, LocalApi

RUNS = 200
ITERATIONS = 3
MODEL_LATENCY_MS = 200
EXECUTION_SLOTS = 32
# (store, Lambda worker processes): the old store, then DynamoDB Local with the handlers in the server's own
# process (`stepwise serve --workers 0`) and in worker processes (the default).
SETUPS = (("moto", DEFAULT_LAMBDA_WORKERS), ("dynamodb-local", 0), ("dynamodb-local", DEFAULT_LAMBDA_WORKERS))


@dataclass(frozen=True)
class _Store:
    endpoint_url: str
    pid: int | None  # the store's own process, when it has one


@contextmanager
def _store(store: str) -> Iterator[_Store]:
    """`store`: "moto" (the old store: moto's server, in memory, in this process) or "dynamodb-local"."""
    if store == "moto":
        with EmbeddedDynamoDB() as moto:
            yield _Store(moto.endpoint_url, None)
        return
    with tempfile.TemporaryDirectory() as data_dir, DynamoDBLocal(Path(data_dir)) as engine:
        yield _Store(engine.endpoint_url, engine.pid)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def burst(store: str, workers: int, runs: int = RUNS) -> str:
    """The burst against `store` with `workers` Lambda worker processes, after a warm-up wave; one table row."""
    with (
        load_client() as (parent, load, tool_api_url),
        tempfile.TemporaryDirectory() as config_dir,
        _store(store) as endpoint,
    ):
        config = scripted_config(ITERATIONS, tool_api_url, model_latency_ms=MODEL_LATENCY_MS)
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with LocalApi(
            config_dir=Path(config_dir),
            dynamodb_endpoint_url=endpoint.endpoint_url,
            retry_interval_scale=0.0,
            max_concurrent_executions=EXECUTION_SLOTS,
            lambda_workers=workers,
        ) as local:
            parent.send((local.url, EXECUTION_SLOTS))
            parent.recv()
            serve_cpu, store_cpu = serve_cpu_seconds(local), _store_cpu(endpoint)
            client_cpu = process_cpu_seconds(load.pid) if load.pid else 0.0
            parent.send((local.url, runs))
            figures: BurstFigures = parent.recv()
            serve_cpu, store_cpu = serve_cpu_seconds(local) - serve_cpu, _store_cpu(endpoint) - store_cpu
            client_cpu = (process_cpu_seconds(load.pid) if load.pid else 0.0) - client_cpu
    ideal = math.ceil(runs / EXECUTION_SLOTS) * ITERATIONS * MODEL_LATENCY_MS / 1000
    wall = figures.wall_seconds
    store_column = f"{store_cpu * 1000 / runs:.0f}" if endpoint.pid is not None else "(in serve)"
    return (
        f"| {store} | {workers} | {runs} | {figures.succeeded} | {figures.accepted_seconds:.1f} | {wall:.1f} "
        f"| {figures.last_ended_seconds:.1f} | {ideal:.1f} | {wall / ideal:.1f}x | {runs / wall:.1f} "
        f"| {serve_cpu * 1000 / runs:.0f} | {store_column} | {client_cpu * 1000 / runs:.0f} |"
    )


def serve_cpu_seconds(local: LocalApi) -> float:
    """CPU seconds of the server so far: this process and its Lambda worker processes."""
    workers = local.environment.workers
    return time.process_time() + sum(process_cpu_seconds(pid) for pid in (workers.pids if workers else []))


def _store_cpu(endpoint: _Store) -> float:
    return process_cpu_seconds(endpoint.pid) if endpoint.pid is not None else 0.0


def main() -> None:
    """The burst against the old store (moto in memory) and the new one (DynamoDB Local), one row per setup."""
    print(
        f"`stepwise serve` throughput: {RUNS} concurrent runs of {ITERATIONS} iterations, {MODEL_LATENCY_MS} ms model, "
        f"{EXECUTION_SLOTS} execution slots, after a warm-up wave of {EXECUTION_SLOTS} runs"
    )
    print(
        "| store | Lambda workers | runs | succeeded | all accepted after s | wall s | last run ended after s "
        "| ideal s | wall / ideal | runs/s | serve CPU ms/run | store CPU ms/run | client and tools CPU ms/run |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for store, workers in SETUPS:
        print(burst(store, workers), flush=True)
