"""The other side of the throughput benchmark, in a process of its own: the tool API the runs call and the
clients that post the burst and poll until every run has ended.

Kept out of the `stepwise serve` process so that the figure is the server's: a client or a tool server
sharing its interpreter would take the same lock (the GIL) the engine's threads wait for.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import httpx

from stepwise.local.example_api import ExampleToolApi

POSTING_THREADS = 16
POLL_SECONDS = 0.25
POLLERS = 4
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT"})
_HEADERS = {"x-api-key": "bench"}


@dataclass(frozen=True)
class BurstFigures:
    """What the client saw of one burst."""

    runs: int
    succeeded: int
    accepted_seconds: float
    wall_seconds: float  # from the first post to the pollers' seeing every run ended
    last_ended_seconds: float  # from the first post to the end of the last run, as the server recorded it


def _post(client: httpx.Client, index: int) -> str:
    response = client.post("/v1/runs", json={"input": f"weather? #{index}"}, headers=_HEADERS)
    response.raise_for_status()
    return str(response.json()["run_id"])


def _poll_in_order(client: httpx.Client, run_ids: list[str]) -> dict[str, dict[str, str]]:
    """Poll `run_ids` in order, each until it ends (a pause only while the run polled is still open); the
    ended runs' views."""
    ended: dict[str, dict[str, str]] = {}
    for run_id in run_ids:
        while True:
            view = client.get(f"/v1/runs/{run_id}", headers=_HEADERS).json()
            if view["status"] in TERMINAL:
                ended[run_id] = view
                break
            time.sleep(POLL_SECONDS)
    return ended


def _wait_for_all(client: httpx.Client, run_ids: list[str]) -> dict[str, dict[str, str]]:
    """Every run's view once it has ended, read by `POLLERS` clients each polling its share in posting order
    (the order the engine starts them).

    A few requests in flight at a time keep the client's own load small beside the server's, whatever the
    size of the burst, without one poller's request latency, 200 times over, deciding when the burst is seen
    to end.
    """
    shares = [run_ids[index::POLLERS] for index in range(POLLERS)]
    with ThreadPoolExecutor(max_workers=POLLERS) as pool:
        views: dict[str, dict[str, str]] = {}
        for share in pool.map(lambda share: _poll_in_order(client, share), shares):
            views |= share
    return views


def _epoch_seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def burst(url: str, runs: int) -> BurstFigures:
    """Post `runs` runs at once to the API at `url` and wait until every one has ended."""
    with httpx.Client(base_url=url, timeout=120) as client:
        started_epoch, started = time.time(), time.perf_counter()
        with ThreadPoolExecutor(max_workers=POSTING_THREADS) as pool:
            run_ids = list(pool.map(lambda index: _post(client, index), range(runs)))
        accepted = time.perf_counter() - started
        views = _wait_for_all(client, run_ids)
        seen = time.perf_counter() - started
    last_ended = max(_epoch_seconds(view["updated_at"]) for view in views.values())
    succeeded = sum(1 for view in views.values() if view["status"] == "SUCCEEDED")
    return BurstFigures(
        runs=runs,
        succeeded=succeeded,
        accepted_seconds=accepted,
        wall_seconds=seen,
        last_ended_seconds=last_ended - started_epoch,
    )


def serve_load(connection: Connection) -> None:
    """The child process: send the tool API's URL, then for each (api_url, runs) received, run a burst and
    send its figures back; None ends it."""
    with ExampleToolApi() as api:
        connection.send(api.url)
        while (request := connection.recv()) is not None:
            api_url, runs = request
            connection.send(burst(api_url, runs))


@contextmanager
def load_client() -> Iterator[tuple[Connection, BaseProcess, str]]:
    """The client process (`serve_load`, spawned): its end of the pipe, the process, and its tool API's URL. On
    leaving, the client is told to stop and is waited for (killed after 10 s)."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    load = context.Process(target=serve_load, args=(child,), name="bench-load", daemon=True)
    load.start()
    try:
        yield parent, load, parent.recv()
        parent.send(None)
    finally:
        load.join(timeout=10)
        if load.is_alive():
            load.kill()
