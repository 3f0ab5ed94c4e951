"""Counting runs for the overview: percentiles, groups by profile, model and UTC day, how runs ended."""

from __future__ import annotations

from datetime import date

import pytest

from stepwise.models.overview import Overview
from stepwise.models.run import RunStatus, RunUsage
from stepwise.steps.overview import overview, percentiles, utc_day, window_start
from stepwise.store.run_facts import RunFact, RunFacts


def fact(
    run_id: str,
    *,
    created_at: str = "2026-11-20T10:00:00.000Z",
    took_ms: int = 1000,
    status: RunStatus = "SUCCEEDED",
    profile: str = "default",
    tokens: tuple[int, int] = (10, 5),
    cost: float | None = 0.01,
) -> RunFact:
    seconds, ms = divmod(took_ms, 1000)
    ended = f"{created_at[:17]}{int(created_at[17:19]) + seconds:02d}.{ms:03d}Z"
    return RunFact(
        run_id=run_id,
        status=status,
        profile=profile,
        deadline=2_000_000_000.0,
        created_at=created_at,
        updated_at=ended,
        usage=RunUsage(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost),
    )


def counted(*runs: RunFact, days: int = 7, today: date = date(2026, 11, 22)) -> Overview:
    return overview(
        RunFacts(runs=list(runs)),
        days=days,
        today=today,
        model_of=lambda profile: {"default": "gpt", "finance": "gpt", "cheap": "mini"}[profile],
        status_of=lambda run: run.status,
    )


def test_percentiles_interpolate_between_the_nearest_ranks() -> None:
    # Given four latencies; When their p50 and p95 are taken
    # Then they lie between ranks as numpy's default (linear) puts them: 2500 and 1000 + 0.95 * 3 * 1000
    assert percentiles([4000.0, 1000.0, 3000.0, 2000.0]) == (2500.0, 3850.0)


@pytest.mark.parametrize(("values", "expected"), [([], (None, None)), ([700.0], (700.0, 700.0))])
def test_percentiles_of_no_value_or_one(values: list[float], expected: tuple[float | None, float | None]) -> None:
    assert percentiles(values) == expected


def test_a_time_written_with_an_offset_falls_on_its_utc_day() -> None:
    # Given a time just after midnight in UTC+2 (still the day before in UTC); Then its day is the UTC one
    assert utc_day("2026-11-21T01:30:00+02:00") == "2026-11-20"
    assert utc_day("2026-11-21T23:59:59.999Z") == "2026-11-21"


def test_the_window_starts_at_midnight_utc_days_minus_one_before_today() -> None:
    assert window_start(date(2026, 11, 22), 7).isoformat() == "2026-11-16T00:00:00+00:00"


def test_runs_are_counted_by_day_with_every_day_of_the_window_listed() -> None:
    # Given two runs on the 20th (UTC) and one on the 22nd
    runs = [
        fact("a", created_at="2026-11-20T10:00:00.000Z"),
        fact("b", created_at="2026-11-20T23:00:00.000Z", status="FAILED"),
        fact("c", created_at="2026-11-22T00:00:01.000Z"),
    ]
    # When a 3-day window ending on the 22nd is counted
    days = counted(*runs, days=3).by_day
    # Then each day of the window is listed, oldest first, with its runs and failures
    assert [(day.key, day.runs, day.failed) for day in days] == [
        ("2026-11-20", 2, 1),
        ("2026-11-21", 0, 0),
        ("2026-11-22", 1, 0),
    ]


def test_runs_are_counted_by_profile_and_by_the_model_of_their_profile() -> None:
    # Given runs of three profiles, two of which call the same model
    runs = [
        fact("a", profile="default", tokens=(100, 10), cost=0.5),
        fact("b", profile="finance", tokens=(200, 20), cost=0.25),
        fact("c", profile="cheap", tokens=(1, 1), cost=None),
    ]
    result = counted(*runs)
    # Then each profile is a group, and the two that share `gpt` add up under it, most runs first
    assert [(group.key, group.runs) for group in result.by_profile] == [("cheap", 1), ("default", 1), ("finance", 1)]
    models = {group.key: group for group in result.by_model}
    assert [group.key for group in result.by_model] == ["gpt", "mini"]
    assert (models["gpt"].input_tokens, models["gpt"].output_tokens, models["gpt"].cost_usd) == (300, 30, 0.75)
    # and a run without a price adds no cost
    assert models["mini"].cost_usd == 0.0


def test_ended_runs_are_sorted_by_how_they_ended_and_only_they_count_for_latency() -> None:
    # Given one run of each ending, and one still going
    runs = [
        fact("ok", took_ms=1000),
        fact("failed", status="FAILED", took_ms=2000),
        fact("timed", status="TIMED_OUT", took_ms=3000),
        fact("cancelled", status="CANCELLED", took_ms=4000),
        fact("open", status="RUNNING", took_ms=59000),
    ]
    totals = counted(*runs).totals
    # Then failures are FAILED and TIMED_OUT, and the open run is in no latency
    assert (totals.runs, totals.succeeded, totals.failed, totals.cancelled, totals.open) == (5, 1, 2, 1, 1)
    assert (totals.latency_p50_ms, totals.latency_p95_ms) == (2500.0, 3850.0)
