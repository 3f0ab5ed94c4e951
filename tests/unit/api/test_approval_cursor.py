"""The cursor of `GET /v1/approvals`: opaque, read back as the position it holds, and anything else refused
naming the parameter."""

from __future__ import annotations

import base64

import pytest

from stepwise.steps.api.approval_views import decode_cursor, encode_cursor
from stepwise.steps.api.problems import InvalidRequest
from stepwise.store import keys


def test_a_cursor_is_read_back_as_the_position_it_was_made_from() -> None:
    # Given the position of a waiting call
    position = keys.waiting_order("2026-11-27T13:39:19.439Z", "run_A-1", 3, 1)
    # When it is made a cursor and read back / Then it is the same position
    assert decode_cursor(encode_cursor(position)) == position


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64!",
        base64.urlsafe_b64encode(b'{"v":1,"after":"2026-11-27T13:39:19Z#run#x#1"}').decode(),
        base64.urlsafe_b64encode(b'{"v":2,"after":"2026-11-27T13:39:19Z#run#0001#01"}').decode(),
        base64.urlsafe_b64encode(b'["2026-11-27T13:39:19Z#run#0001#01"]').decode(),
    ],
    ids=["garbage", "bad-position", "other-version", "not-an-object"],
)
def test_a_cursor_this_api_did_not_hand_out_is_refused_naming_the_parameter(cursor: str) -> None:
    # When it is read / Then it is a 422 naming `cursor`
    with pytest.raises(InvalidRequest) as refused:
        decode_cursor(cursor)
    assert refused.value.details["errors"][0]["field"] == "cursor (query parameter)"
