"""`stepwise serve --workers N`: the state machine's Lambda invocations in worker processes of their own.

The server runs as its own process (as a user starts it), on the session's DynamoDB Local, with a config
whose scripted model takes a while per turn so that a run is caught mid-step.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.e2e.test_serve_recovery import (
    ITERATIONS,
    _post,
    _store,
    _wait_until,
    model_latency_ms,  # noqa: F401  (a fixture serve_arguments uses)
    serve_arguments,  # noqa: F401  (the fixture, for the tests below)
)
from tests.support.serve_process import ServeProcess

WORKERS = 2
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}


def _worker_pids(serve_pid: int) -> set[int]:
    """The Lambda worker processes among `serve_pid`'s children."""
    children: set[int] = set()
    for task in Path(f"/proc/{serve_pid}/task").iterdir():
        children |= {int(pid) for pid in (task / "children").read_text(encoding="ascii").split()}
    return {pid for pid in children if b"stepwise.local.lambda_workers" in _command_line(pid)}


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_sigterm_drains_the_steps_in_flight_then_stops_every_worker(serve_arguments: list[str]) -> None:  # noqa: F811
    # Given `stepwise serve` with two Lambda workers, and a run caught mid-loop
    served = ServeProcess([*serve_arguments, "--workers", str(WORKERS)])
    run_id = _post(served.url, index=100)
    _wait_until(served.url, [run_id], lambda run: run["status"] == "RUNNING")
    workers = _worker_pids(served.process.pid)

    # When the server gets SIGTERM
    code = served.end(signal.SIGTERM)

    # Then it exited 0, and neither worker process is left running
    assert code == 0
    assert len(workers) == WORKERS
    assert [pid for pid in workers if _running(pid)] == []


def test_a_run_whose_workers_are_killed_mid_step_is_retried_and_succeeds_whole(
    serve_arguments: list[str],  # noqa: F811
    dynamodb_local: str,
    unique_table_name: str,
) -> None:
    # Given `stepwise serve` with two Lambda workers, and a run caught mid-loop
    served = ServeProcess([*serve_arguments, "--workers", str(WORKERS)])
    try:
        run_id = _post(served.url, index=200)
        _wait_until(served.url, [run_id], lambda run: run["status"] == "RUNNING")
        killed = _worker_pids(served.process.pid)

        # When both workers are killed (as an out-of-memory kill would end a Lambda runtime)
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        runs = _wait_until(served.url, [run_id], lambda run: run["status"] in TERMINAL)
        replacements = _worker_pids(served.process.pid)
    finally:
        served.end(signal.SIGTERM)

    # Then the step in flight failed as a Lambda service error, was retried on new workers, and the run succeeded
    assert runs[run_id]["status"] == "SUCCEEDED"
    assert len(killed) == WORKERS
    assert replacements and not replacements & killed
    # And its conversation is whole, every message once
    store = _store(dynamodb_local, unique_table_name)
    roles = [message.role for message in store.list_messages(run_id)]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert store.require_run(run_id).usage.llm_calls == ITERATIONS
