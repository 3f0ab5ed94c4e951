"""Counting an owner's recent runs for the overview: totals, failures, tokens, cost and latency percentiles,
whole and by profile, model and day (UTC).

Pure functions over what the store keeps of each run (`stepwise.store.run_facts`): the overview needs no
store of its own. A run's latency is the time from its creation to its end (its META's `created_at` to its
last `updated_at`), counted once it ended.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta

from stepwise.models.overview import Overview, OverviewGroup
from stepwise.models.run import OPEN_STATUSES
from stepwise.store.run_facts import RunFact, RunFacts

FAILED_STATUSES = frozenset({"FAILED", "TIMED_OUT"})
ALL = "all"


def window_start(today: date, days: int) -> datetime:
    """Midnight UTC `days - 1` days before `today`: a window of `days` whole calendar days, today included."""
    first = today - timedelta(days=days - 1)
    return datetime(first.year, first.month, first.day, tzinfo=UTC)


def iso_time(moment: datetime) -> str:
    """`moment` as the store writes times (UTC, milliseconds, `Z`), so it compares with them as text."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parsed(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def utc_day(created_at: str) -> str:
    """The UTC calendar day (YYYY-MM-DD) of an ISO time, whatever offset it was written with."""
    moment = _parsed(created_at)
    return moment.astimezone(UTC).date().isoformat() if moment else created_at[:10]


def latency_ms(run: RunFact) -> float | None:
    """Milliseconds from the run's creation to its end; None while it is open or when a time does not parse."""
    if run.status in OPEN_STATUSES:
        return None
    created, ended = _parsed(run.created_at), _parsed(run.updated_at)
    if created is None or ended is None:
        return None
    return max(0.0, (ended - created).total_seconds() * 1000)


def percentiles(values: list[float]) -> tuple[float | None, float | None]:
    """The 50th and 95th percentiles of `values`, interpolated between the nearest ranks (the `inclusive`
    method of `statistics.quantiles`, numpy's default `linear`); (None, None) without values."""
    if not values:
        return None, None
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return round(cuts[49], 1), round(cuts[94], 1)


def count(key: str, runs: Iterable[RunFact], status_of: Callable[[RunFact], str]) -> OverviewGroup:
    """The group `key` of `runs`: counts by how they ended (as `status_of` reports them), usage and latency."""
    group = OverviewGroup(key=key)
    latencies: list[float] = []
    cost = 0.0
    for run in runs:
        status = status_of(run)
        group.runs += 1
        group.succeeded += status == "SUCCEEDED"
        group.failed += status in FAILED_STATUSES
        group.cancelled += status == "CANCELLED"
        group.open += status in OPEN_STATUSES
        group.input_tokens += run.usage.input_tokens
        group.output_tokens += run.usage.output_tokens
        cost += run.usage.cost_usd or 0.0
        took = latency_ms(run)
        if took is not None:
            latencies.append(took)
    group.cost_usd = round(cost, 6)
    group.latency_p50_ms, group.latency_p95_ms = percentiles(latencies)
    return group


def _grouped(runs: list[RunFact], key_of: Callable[[RunFact], str]) -> dict[str, list[RunFact]]:
    groups: dict[str, list[RunFact]] = {}
    for run in runs:
        groups.setdefault(key_of(run), []).append(run)
    return groups


def overview(
    facts: RunFacts,
    *,
    days: int,
    today: date,
    model_of: Callable[[str], str],
    status_of: Callable[[RunFact], str],
) -> Overview:
    """The overview of `facts` over the `days` days that end `today` (UTC): totals, and groups by profile
    and by model (most runs first) and by day (every day of the window, oldest first)."""
    runs = facts.runs
    by_day = _grouped(runs, lambda run: utc_day(run.created_at))
    first = window_start(today, days).date()
    every_day = [(first + timedelta(days=offset)).isoformat() for offset in range(days)]

    def ranked(groups: dict[str, list[RunFact]]) -> list[OverviewGroup]:
        counted = [count(key, members, status_of) for key, members in groups.items()]
        return sorted(counted, key=lambda group: (-group.runs, group.key))

    return Overview(
        days=days,
        since=iso_time(window_start(today, days)),
        runs_read=len(runs),
        truncated=facts.truncated,
        totals=count(ALL, runs, status_of),
        by_profile=ranked(_grouped(runs, lambda run: run.profile)),
        by_model=ranked(_grouped(runs, lambda run: model_of(run.profile))),
        by_day=[count(day, by_day.get(day, []), status_of) for day in every_day],
    )
