"""Streams under `stepwise serve`: what other requests wait while many streams are opened, held or abandoned.

The server runs in this process, on DynamoDB Local (its default store) and on the in-memory store the tests
use (moto, which serves one request at a time); the runs followed are
stored QUEUED and never started, so a stream of them never ends by itself, and streamed chats start runs of
a scripted model that answers at once. Clients are raw sockets on one asyncio loop; the latency of
`GET /v1/models` (no store read) and `GET /v1/runs/{id}` (one store read) is probed from another thread,
sequentially, and its median and worst are printed.

- **abandoned**: 200 followers and 50 streamed chats sent at once, each reading its answer's head and
  closing; with the server's default limits. The thread count before (the probes running, after a
  warm-up round), at its peak, and how long it takes to come back.
- **held**: N followers kept open (N up to the server's `max_streams`, raised for the figure past it), each
  polling the store five times a second; what the two probes take meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import yaml

from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.http_front import FrontLimits
from stepwise.local.server import LocalApi
from tests.support.abandoned_streams import (
    chat_request,
    follow_request,
    open_run,
    port_of,
    read_once_and_leave,
    status_of,
)

FOLLOWERS = 200
CHATS = 50
HELD = (0, 8, 32, 64)
PROBES = 20
ANSWER = json.dumps({"action": "Final Answer", "action_input": "Hi."})
CONFIG = {
    "models": {
        "scripted": {"provider": "scripted", "scenarios": [{"turns": [{"content": f"```json\n{ANSWER}\n```"}]}]}
    },
    "profiles": {"default": {"model": "scripted", "strategy": "react", "protocol": "react_json"}},
}


STORES = ("DynamoDB Local", "in memory")


@contextmanager
def local_api(store: str, limits: FrontLimits) -> Iterator[LocalApi]:
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        config_dir = Path(folder)
        (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
        endpoint = stack.enter_context(DynamoDBLocal(config_dir / "data")).endpoint_url if store == STORES[0] else None
        with LocalApi(config_dir=config_dir, front_limits=limits, dynamodb_endpoint_url=endpoint) as api:
            yield api


async def _abandon(port: int, request: bytes) -> int:
    return status_of(await read_once_and_leave(port, request, timeout=120))


async def _abandon_all(port: int, requests: list[bytes]) -> list[int]:
    return list(await asyncio.gather(*(_abandon(port, request) for request in requests)))


class Probes:
    """`GET /v1/models` and `GET /v1/runs/{id}` sent one after the other from a thread, timed."""

    def __init__(self, api: LocalApi, run_id: str) -> None:
        self.seconds: dict[str, list[float]] = {"models": [], "run": []}
        self._client = httpx.Client(base_url=api.url, headers={"x-api-key": "probe"}, timeout=120)
        self._paths = {"models": "/v1/models", "run": f"/v1/runs/{run_id}"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def _probe(self) -> None:
        while not self._stop.is_set():
            for name, path in self._paths.items():
                started = time.perf_counter()
                self._client.get(path)
                self.seconds[name].append(time.perf_counter() - started)

    def forget(self) -> None:
        """Drop the timings so far."""
        for samples in self.seconds.values():
            samples.clear()

    def __enter__(self) -> Probes:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()


def streaming_threads() -> int:
    """Threads producing a stream's next chunk (`http_front` names them so)."""
    return sum(thread.name == "api-streaming" for thread in threading.enumerate())


def thread_names() -> Counter[str]:
    return Counter(thread.name.split(" ")[0].rstrip("0123456789_-") for thread in threading.enumerate())


def pools_grown(before: Counter[str]) -> str:
    grown = thread_names() - before
    return ", ".join(f"{name} +{count}" for name, count in sorted(grown.items())) or "none"


def milliseconds(samples: list[float]) -> str:
    if not samples:
        return "-"
    return f"{statistics.median(samples) * 1000:.0f} / {max(samples) * 1000:.0f}"


def abandoned(store: str) -> None:
    with local_api(store, FrontLimits()) as api:
        run_id = open_run(api, "alice", "default")
        requests = [follow_request(run_id, "alice") for _ in range(FOLLOWERS)] + [
            chat_request(f"c{n % 5}", "default") for n in range(CHATS)
        ]
        with Probes(api, open_run(api, "probe", "default")) as probes:
            asyncio.run(_abandon_all(port_of(api), requests[:20] + requests[-10:]))  # warm-up, not counted
            time.sleep(3)
            probes.forget()
            before, peak, names_before = threading.active_count(), 0, thread_names()
            watching = threading.Event()

            def watch() -> None:
                nonlocal peak
                while not watching.is_set():
                    peak = max(peak, threading.active_count())
                    time.sleep(0.01)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            started = time.perf_counter()
            statuses = Counter(asyncio.run(_abandon_all(port_of(api), requests)))
            sent = time.perf_counter() - started
            back = time.perf_counter()
            while streaming_threads() and time.perf_counter() - back < 30:
                time.sleep(0.01)
            back_seconds = time.perf_counter() - back
            watching.set()
            watcher.join()
            time.sleep(5)
            after = threading.active_count()
        print(f"{FOLLOWERS} followers and {CHATS} streamed chats abandoned at once ({store}, default limits)")
        print(f"  answered in {sent:.1f} s: " + ", ".join(f"{count} x {status}" for status, count in statuses.items()))
        print(
            f"  threads: {before} before, {peak - 1} at the peak; the last stream's ended {back_seconds:.2f} s after "
            f"the last answer; {after} threads 5 s later (pools that grew: {pools_grown(names_before)})"
        )
        print(f"  GET /v1/models ms (median / worst): {milliseconds(probes.seconds['models'])}")
        print(f"  GET /v1/runs/{{id}} ms (median / worst): {milliseconds(probes.seconds['run'])}")


def held(store: str) -> None:
    print(f"followers held open, each polling the store every 0.2 s ({store})")
    print(f"  {'followers':>9}  {'GET /v1/models ms':>18}  {'GET /v1/runs/{id} ms':>21}  (median / worst of {PROBES})")
    with local_api(store, FrontLimits(max_streams=max(HELD), max_streams_per_owner=max(HELD))) as api:
        run_id = open_run(api, "alice", "default")
        with Probes(api, run_id) as warm:  # the API function's instances imported before anything is timed
            while len(warm.seconds["run"]) < 3:
                time.sleep(0.05)
        for count in HELD:
            with ExitStack() as stack:
                for _ in range(count):
                    connection = stack.enter_context(socket.create_connection(("127.0.0.1", port_of(api))))
                    connection.sendall(follow_request(run_id, "alice"))
                    assert connection.recv(65536).startswith(b"HTTP/1.1 200")
                time.sleep(1)
                with Probes(api, run_id) as probes:
                    while len(probes.seconds["run"]) < PROBES:
                        time.sleep(0.05)
            print(
                f"  {count:>9}  {milliseconds(probes.seconds['models']):>18}  {milliseconds(probes.seconds['run']):>21}"
            )


def main() -> None:
    """Print both tables, for each store."""
    for store in STORES:
        abandoned(store)
        print()
        held(store)
        print()


if __name__ == "__main__":
    main()
