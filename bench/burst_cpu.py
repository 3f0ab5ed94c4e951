"""The CPU a run of `stepwise serve`'s burst takes, for comparing two versions of the code on a loaded machine.

The burst of `bench/serve_throughput.py` (the same server, model, tools, slots and client), but only its CPU
figures: the server's (with its Lambda worker processes) and DynamoDB Local's per run, and the first as a
share of the second. Both sides make the same DynamoDB requests, so the share takes out most of what the
machine's speed does to either; run the two versions alternately, several times each (docs/performance.md,
"Where a burst's time goes"). `python -m bench.burst_cpu [runs] [workers]`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

from bench.harness import scripted_config
from bench.load_client import load_client
from bench.serve_throughput import EXECUTION_SLOTS, ITERATIONS, MODEL_LATENCY_MS, process_cpu_seconds, serve_cpu_seconds
from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.server import DEFAULT_LAMBDA_WORKERS, LocalApi


def burst_cpu(runs: int, workers: int) -> str:
    """One burst of `runs` after a warm-up wave: serve and DynamoDB Local CPU ms per run, and their ratio."""
    with (
        load_client() as (parent, _, tool_api_url),
        tempfile.TemporaryDirectory() as config_dir,
        tempfile.TemporaryDirectory() as data_dir,
    ):
        config = scripted_config(ITERATIONS, tool_api_url, model_latency_ms=MODEL_LATENCY_MS)
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with (
            DynamoDBLocal(Path(data_dir)) as engine,
            LocalApi(
                config_dir=Path(config_dir),
                dynamodb_endpoint_url=engine.endpoint_url,
                retry_interval_scale=0.0,
                max_concurrent_executions=EXECUTION_SLOTS,
                lambda_workers=workers,
            ) as local,
        ):
            parent.send((local.url, EXECUTION_SLOTS))
            parent.recv()
            serve, store = serve_cpu_seconds(local), _engine_cpu(engine)
            parent.send((local.url, runs))
            figures = parent.recv()
            serve, store = serve_cpu_seconds(local) - serve, _engine_cpu(engine) - store
    return (
        f"runs {runs} ({figures.succeeded} succeeded), {workers} workers: "
        f"serve CPU {serve * 1000 / runs:.1f} ms a run, DynamoDB Local {store * 1000 / runs:.1f} ms a run, "
        f"serve / DynamoDB Local {serve / max(store, 1e-9):.2f}"
    )


def _engine_cpu(engine: DynamoDBLocal) -> float:
    return process_cpu_seconds(engine.pid) if engine.pid is not None else 0.0


def main(argv: list[str]) -> None:
    """Print one burst's CPU figures: `[runs] [workers]` (96 and the server's default)."""
    runs = int(argv[0]) if argv else 96
    workers = int(argv[1]) if len(argv) > 1 else DEFAULT_LAMBDA_WORKERS
    print(burst_cpu(runs, workers), flush=True)


if __name__ == "__main__":
    from stepwise.local.defaults import apply_local_defaults

    apply_local_defaults()  # as `python -m bench` does before the burst
    main(sys.argv[1:])
