"""The filters of `GET /v1/runs` gathered from its validated query parameters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.run_list_params import run_filter

EARLY = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
LATE = datetime(2026, 11, 22, 11, 0, tzinfo=UTC)


@pytest.mark.parametrize(("after", "before"), [(LATE, EARLY), (EARLY, EARLY)], ids=["swapped", "empty"])
def test_a_creation_range_that_holds_no_moment_is_refused_naming_created_after(
    after: datetime, before: datetime
) -> None:
    # When the runs are filtered to those created at or after `after` and before `before`, which is not later
    with pytest.raises(InvalidRequest) as refused:
        run_filter(created_after=after, created_before=before)
    # Then it is a 422 naming created_after and why, instead of a page that reads as "no such runs"
    [problem] = refused.value.details["errors"]
    assert problem["field"] == "created_after (query parameter)"
    assert "is not before created_before" in problem["reason"]


def test_a_creation_range_is_kept_as_runs_creation_times_are_stored() -> None:
    # When the runs are filtered to an hour given with an offset
    filters = run_filter(created_after=EARLY, created_before=LATE.astimezone().replace(microsecond=0))
    # Then both ends are kept in UTC with milliseconds, as creation times are stored
    assert (filters.created_after, filters.created_before) == ("2026-11-22T10:00:00.000Z", "2026-11-22T11:00:00.000Z")
