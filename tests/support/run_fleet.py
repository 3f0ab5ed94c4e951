"""A fleet's history for the console's runs list: 300 ended runs of one key, stored directly in batches (no
loop runs), and a counter of the API requests a page makes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.sync_api import Page, Request

from stepwise.local.environment import LocalEnvironment
from stepwise.models.run import RunMeta, RunStatus, RunUsage
from stepwise.store.codec import serialize_item
from stepwise.store.items import meta_item

FLEET = "fleet"
FLEET_SIZE = 300
# The five oldest runs failed: none of them is on the first page of the unfiltered list.
FAILED_RUNS = {f"fleet-{n:03d}" for n in range(5)}
# One run, far down the list, asked about a word no other question holds.
NEEDLE_RUN = "fleet-040"
NEEDLE_WORD = "Zanzibar"
_BATCH_WRITE_LIMIT = 25


def fleet_run(n: int, now: datetime) -> RunMeta:
    """The `n`th run of the fleet (0 the oldest), created a minute after the one before, and ended."""
    run_id = f"fleet-{n:03d}"
    created = (now - timedelta(minutes=FLEET_SIZE - n)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    status: RunStatus = "FAILED" if run_id in FAILED_RUNS else "SUCCEEDED"
    place = NEEDLE_WORD if run_id == NEEDLE_RUN else "Paris"
    return RunMeta(
        run_id=run_id,
        owner=FLEET,
        profile="assistant",
        status=status,
        stop_reason="error" if status == "FAILED" else "final_answer",
        outcome="none" if status == "FAILED" else "answered",
        answer=None if status == "FAILED" else "Sunny.",
        iteration=2,
        deadline=2_000_000_000.0,
        question=f"What is the weather in {place} today (run {n})?",
        usage=RunUsage(input_tokens=100 + n, output_tokens=10, llm_calls=2, cost_usd=0.0012),
        created_at=created,
        updated_at=created,
        expires_at=2_000_000_000,
    )


def store_fleet(environment: LocalEnvironment) -> list[RunMeta]:
    """Store the fleet's 300 runs in the environment's table."""
    now = datetime.now(UTC)
    return store_runs(environment, [fleet_run(n, now) for n in range(FLEET_SIZE)])


def store_runs(environment: LocalEnvironment, runs: list[RunMeta]) -> list[RunMeta]:
    """Store ended runs' META items (all a listing reads) in the environment's table, 25 to a BatchWriteItem:
    hundreds in a fraction of the time one conditional put each takes."""
    for start in range(0, len(runs), _BATCH_WRITE_LIMIT):
        writes = [
            {"PutRequest": {"Item": serialize_item(meta_item(run))}} for run in runs[start : start + _BATCH_WRITE_LIMIT]
        ]
        request: dict[str, Any] = {environment.table_name: writes}
        while request:
            request = environment.dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    return runs


def api_requests(page: Page) -> list[str]:
    """The URLs of the API requests `page` makes from now on (not the console's own files)."""
    seen: list[str] = []

    def note(request: Request) -> None:
        if "/v1/" in request.url:
            seen.append(request.url)

    page.on("request", note)
    return seen
