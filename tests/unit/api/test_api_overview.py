"""`GET /v1/overview`'s logic over a moto table: which runs it reads (the caller's, in the window, at most a
cap) and how it reports a run lost past its deadline."""

from __future__ import annotations

from stepwise.models.run import RunMeta, RunStatus, RunUsage
from stepwise.steps.api.overview import describe_overview
from tests.unit.api.conftest import ApiWorld

# The world's clock is 2027-01-15T08:00:00Z: a 7-day window starts on 2027-01-09 at midnight UTC.


def seed(
    world: ApiWorld,
    run_id: str,
    created_at: str,
    *,
    owner: str = "owner",
    status: RunStatus = "SUCCEEDED",
    deadline: float = 2_000_000_000.0,
) -> None:
    meta = RunMeta(
        run_id=run_id,
        owner=owner,
        profile="finance",
        status=status,
        deadline=deadline,
        created_at=created_at,
        updated_at=created_at,
        expires_at=2_000_000_000,
        usage=RunUsage(input_tokens=3, output_tokens=2, cost_usd=0.5),
    )
    assert world.services.runtime.store.create_run(meta, [])


def test_the_overview_counts_the_callers_runs_of_the_window_only(world: ApiWorld) -> None:
    # Given two runs of the caller in the window, one created the day before it, and one of another owner
    seed(world, "in-1", "2027-01-09T00:00:00.000Z")
    seed(world, "in-2", "2027-01-15T07:00:00.000Z")
    seed(world, "before", "2027-01-08T23:59:59.999Z")
    seed(world, "theirs", "2027-01-14T10:00:00.000Z", owner="someone-else")
    # When the caller asks for the last 7 days
    result = describe_overview(world.services, owner="owner", days=7)
    # Then only their two runs are counted, with their usage read from META, under the profile's model
    assert (result.since, result.runs_read, result.truncated) == ("2027-01-09T00:00:00.000Z", 2, False)
    assert (result.totals.input_tokens, result.totals.output_tokens, result.totals.cost_usd) == (6, 4, 1.0)
    assert [(group.key, group.runs) for group in result.by_model] == [("m", 2)]


def test_a_run_open_long_past_its_deadline_is_counted_failed(world: ApiWorld) -> None:
    # Given a run still RUNNING whose deadline passed an hour before now
    seed(world, "lost", "2027-01-15T06:00:00.000Z", status="RUNNING", deadline=world.time.now - 3600)
    # When the overview is read; Then it is counted as GET /v1/runs reports it: TIMED_OUT, a failure
    totals = describe_overview(world.services, owner="owner", days=1).totals
    assert (totals.runs, totals.failed, totals.open) == (1, 1, 0)


def test_a_read_past_its_cap_keeps_the_newest_runs_and_says_it_was_cut(world: ApiWorld) -> None:
    # Given three runs of the caller
    for hour in (5, 6, 7):
        seed(world, f"run-{hour}", f"2027-01-15T0{hour}:00:00.000Z")
    # When the store reads them with a cap of two
    facts = world.services.runtime.store.run_facts.created_since("owner", "2027-01-15T00:00:00.000Z", limit=2)
    # Then the two newest are read and the answer says more were there
    assert ([run.run_id for run in facts.runs], facts.truncated) == (["run-7", "run-6"], True)
