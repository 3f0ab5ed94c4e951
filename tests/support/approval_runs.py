"""A deployer's tool module that changes something (so it waits for approval), and runs started and polled over
the HTTP API as a client does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.support.polling import run_seen, wait_for

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}
# A tool module of the deployer's: each transfer is written to a ledger next to it, so a test sees
# whether the tool really ran.
PAYMENTS = '''
from pathlib import Path

from stepwise.tools import tool

LEDGER = Path(__file__).with_name("ledger.txt")


@tool
def transfer(amount: int, to: str) -> str:
    """Send money.

    Args:
        amount: How much.
        to: To whom.
    """
    with LEDGER.open("a", encoding="utf-8") as ledger:
        ledger.write(f"{amount} {to}\\n")
    return f"sent {amount} to {to}"
'''


def start(client: httpx.Client, question: str) -> str:
    response = client.post("/v1/runs", json={"input": question})
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def poll(client: httpx.Client, run_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The run once `until` holds (polled as a client would); fails after `CROSS_PROCESS_SECONDS` naming the run's
    last status, and at once on an answer that is not the run's."""

    def read() -> dict[str, Any]:
        response = client.get(f"/v1/runs/{run_id}")
        assert response.status_code == 200, f"run {run_id}: GET answered {response.status_code}: {response.text}"
        body: dict[str, Any] = response.json()
        return body

    return wait_for(read, until, what=f"run {run_id}", shown=run_seen)


def waiting(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it waits for approval; fails if it ends first, saying how it ended."""
    run = poll(client, run_id, lambda run: run["status"] in TERMINAL | {"WAITING_APPROVAL"})
    assert run["status"] == "WAITING_APPROVAL", f"run {run_id} ended before it waited for approval: {run_seen(run)}"
    return run


def finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it ended."""
    return poll(client, run_id, lambda run: run["status"] in TERMINAL)
