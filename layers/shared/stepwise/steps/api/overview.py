"""The logic of `GET /v1/overview`: the caller's runs of the last days, counted (see `stepwise.steps.overview`).

The read is bounded twice: by the window (`days`, at most `MAX_DAYS` of `stepwise.models.overview`) and by
`MAX_RUNS`, the newest runs of the window; past it the answer says `truncated`. At the cap, the read costs one
Query of the owner index (~0.5 RCU per 4 KB of entries) and 20 BatchGetItem calls (~0.5 RCU per run).
"""

from __future__ import annotations

from datetime import UTC, datetime

from stepwise.models.overview import MAX_RUNS, Overview
from stepwise.models.run import OPEN_STATUSES
from stepwise.steps.api.services import ApiServices
from stepwise.steps.overview import iso_time, overview, window_start
from stepwise.store.run_facts import RunFact

UNKNOWN_MODEL = "unknown"


def describe_overview(services: ApiServices, *, owner: str, days: int) -> Overview:
    """The caller's runs created in the last `days` UTC days, counted whole and by profile, model and day."""
    now = services.runtime.clock()
    today = datetime.fromtimestamp(now, UTC).date()
    grace = services.lost_run_grace_seconds
    profiles = services.config.profiles
    facts = services.runtime.store.run_facts.created_since(owner, iso_time(window_start(today, days)), limit=MAX_RUNS)

    def status_of(run: RunFact) -> str:
        # as GET /v1/runs reports it: a run still open past its deadline was lost
        return "TIMED_OUT" if run.status in OPEN_STATUSES and now > run.deadline + grace else run.status

    def model_of(profile: str) -> str:
        # a profile removed from the configuration since its runs: their model is no longer known
        return profiles[profile].model if profile in profiles else UNKNOWN_MODEL

    return overview(facts, days=days, today=today, model_of=model_of, status_of=status_of)
