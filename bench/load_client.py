"""The other side of the throughput benchmark, in a process of its own: the tool API the runs call and the
clients that post the burst and poll until every run has ended.

Kept out of the `stepwise serve` process so that the figure is the server's: a client or a tool server
sharing its interpreter would take the same lock (the GIL) the engine's threads wait for.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection

import httpx

from stepwise.local.example_api import ExampleToolApi

POSTING_THREADS = 16
POLL_SECONDS = 0.25
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT"})
_HEADERS = {"x-api-key": "bench"}


@dataclass(frozen=True)
class BurstFigures:
    """What the client saw of one burst."""

    runs: int
    succeeded: int
    accepted_seconds: float
    wall_seconds: float


def _post(client: httpx.Client, index: int) -> str:
    response = client.post("/v1/runs", json={"input": f"weather? #{index}"}, headers=_HEADERS)
    response.raise_for_status()
    return str(response.json()["run_id"])


def _wait_for_all(client: httpx.Client, run_ids: list[str]) -> dict[str, str]:
    """Poll the runs in the order they were posted (the order the engine starts them), each until it ends.

    One request in flight at a time, a pause only while the oldest open run is still running: the
    client's own load stays small beside the server's, whatever the size of the burst.
    """
    statuses: dict[str, str] = {}
    for run_id in run_ids:
        while True:
            status = str(client.get(f"/v1/runs/{run_id}", headers=_HEADERS).json()["status"])
            if status in TERMINAL:
                statuses[run_id] = status
                break
            time.sleep(POLL_SECONDS)
    return statuses


def burst(url: str, runs: int) -> BurstFigures:
    """Post `runs` runs at once to the API at `url` and wait until every one has ended."""
    with httpx.Client(base_url=url, timeout=120) as client:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=POSTING_THREADS) as pool:
            run_ids = list(pool.map(lambda index: _post(client, index), range(runs)))
        accepted = time.perf_counter() - started
        statuses = _wait_for_all(client, run_ids)
        wall = time.perf_counter() - started
    succeeded = sum(1 for status in statuses.values() if status == "SUCCEEDED")
    return BurstFigures(runs=runs, succeeded=succeeded, accepted_seconds=accepted, wall_seconds=wall)


def serve_load(connection: Connection) -> None:
    """The child process: send the tool API's URL, then for each (api_url, runs) received, run a burst and
    send its figures back; None ends it."""
    with ExampleToolApi() as api:
        connection.send(api.url)
        while (request := connection.recv()) is not None:
            api_url, runs = request
            connection.send(burst(api_url, runs))
