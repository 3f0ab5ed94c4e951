"""Throughput of `stepwise serve`: many concurrent runs over real HTTP, against the ideal wall time.

Each run takes 3 iterations with a scripted model that answers in 200 ms; the ideal is what the model's
latency alone would take with the local engine's execution slots all busy.
"""

from __future__ import annotations

import math
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import yaml

from bench.harness import scripted_config
from bench.store_query import store_endpoint
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.server import LocalApi

RUNS = 200
ITERATIONS = 3
MODEL_LATENCY_MS = 200
EXECUTION_SLOTS = 32
POLL_SECONDS = 0.25


def _post(client: httpx.Client, index: int) -> str:
    response = client.post("/v1/runs", json={"input": f"weather? #{index}"}, headers={"x-api-key": "bench"})
    response.raise_for_status()
    return str(response.json()["run_id"])


def _wait_for_all(client: httpx.Client, run_ids: list[str]) -> dict[str, str]:
    statuses: dict[str, str] = {}
    pending = set(run_ids)
    while pending:
        for run_id in list(pending):
            status = client.get(f"/v1/runs/{run_id}", headers={"x-api-key": "bench"}).json()["status"]
            if status in ("SUCCEEDED", "FAILED", "TIMED_OUT"):
                statuses[run_id] = status
                pending.discard(run_id)
        if pending:
            time.sleep(POLL_SECONDS)
    return statuses


def burst(store: str) -> str:
    """Post RUNS runs at once against `store` ("moto" or "dynamodb-local"), wait for all; one table row."""
    with (
        ExampleToolApi() as api,
        tempfile.TemporaryDirectory() as config_dir,
        store_endpoint(store) as endpoint_url,
    ):
        config = scripted_config(ITERATIONS, api.url, model_latency_ms=MODEL_LATENCY_MS)
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with (
            LocalApi(
                config_dir=Path(config_dir),
                dynamodb_endpoint_url=endpoint_url,
                retry_interval_scale=0.0,
                max_concurrent_executions=EXECUTION_SLOTS,
            ) as local,
            httpx.Client(base_url=local.url, timeout=60) as client,
        ):
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=16) as pool:
                run_ids = list(pool.map(lambda index: _post(client, index), range(RUNS)))
            accepted = time.perf_counter() - started
            statuses = _wait_for_all(client, run_ids)
            wall = time.perf_counter() - started
    succeeded = sum(1 for status in statuses.values() if status == "SUCCEEDED")
    per_run = ITERATIONS * MODEL_LATENCY_MS / 1000
    ideal = math.ceil(RUNS / EXECUTION_SLOTS) * per_run
    ratio = wall / ideal
    return (
        f"| {store} | {RUNS} | {succeeded} | {accepted:.1f} | {wall:.1f} | {ideal:.1f} | {ratio:.1f}x "
        f"| {RUNS / wall:.1f} |"
    )


def main() -> None:
    """The burst against the old store (moto in memory) and the new one (DynamoDB Local), one row each."""
    print(
        f"`stepwise serve` throughput: {RUNS} concurrent runs of {ITERATIONS} iterations, {MODEL_LATENCY_MS} ms model"
    )
    print(
        "| store | runs | succeeded | all accepted after s | wall s | ideal s (model time, "
        f"{EXECUTION_SLOTS} execution slots) | wall / ideal | runs/s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for store in ("moto", "dynamodb-local"):
        print(burst(store), flush=True)
