"""A deployer's tool module that changes something (so it waits for approval), and runs started and polled over
the HTTP API as a client does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

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
    """The run once `until` holds (polled as a client would; gives up after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        if until(body) or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def waiting(client: httpx.Client, run_id: str) -> dict[str, Any]:
    return poll(client, run_id, lambda run: run["status"] in TERMINAL | {"WAITING_APPROVAL"})


def finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    return poll(client, run_id, lambda run: run["status"] in TERMINAL)
