"""The cursor of `GET /v1/runs`: bound to the filters of the listing it was returned for; a cursor from before
that (version 1, which a bookmarked console address keeps) is read as it was meant."""

from __future__ import annotations

import base64
import json

import pytest

from stepwise.models.run import RunStatus
from stepwise.steps.api.lifecycle import decode_cursor, encode_cursor, listing_tag
from stepwise.steps.api.problems import InvalidRequest
from stepwise.store.run_filters import RunFilter

POSITION = "2026-11-27T13:39:19.439Z#run_A-1"


def test_a_cursor_is_read_back_under_the_filters_it_was_returned_for() -> None:
    # Given a cursor of the listing of FAILED runs of profile `p`
    listing = listing_tag("FAILED", None, RunFilter(profile="p"))
    # When it is read for the same filters / Then it is the same position
    assert decode_cursor(encode_cursor(POSITION, listing), listing_tag("FAILED", None, RunFilter(profile="p"))) == (
        POSITION
    )


@pytest.mark.parametrize(
    ("status", "session_id", "filters"),
    [("SUCCEEDED", None, RunFilter(profile="p")), ("FAILED", "s1", RunFilter(profile="p")), ("FAILED", None, None)],
    ids=["other-status", "a-session", "no-profile"],
)
def test_a_cursor_read_under_other_filters_is_refused_saying_why(
    status: RunStatus, session_id: str | None, filters: RunFilter | None
) -> None:
    # Given a cursor of the listing of FAILED runs of profile `p`
    cursor = encode_cursor(POSITION, listing_tag("FAILED", None, RunFilter(profile="p")))
    # When it is read under other filters / Then it is a 422 naming `cursor` and why
    with pytest.raises(InvalidRequest) as refused:
        decode_cursor(cursor, listing_tag(status, session_id, filters))
    [error] = refused.value.details["errors"]
    assert error["field"] == "cursor (query parameter)" and "other filters" in error["reason"]


def test_a_cursor_from_before_filters_were_bound_is_read_as_it_was_meant() -> None:
    # Given a version-1 cursor, which named no filters
    old = base64.urlsafe_b64encode(json.dumps({"v": 1, "after": POSITION}).encode()).decode().rstrip("=")
    # When it is read under any filters / Then it is its position
    assert decode_cursor(old, listing_tag("FAILED", None, None)) == POSITION
