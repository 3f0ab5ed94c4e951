"""The store's keys: one session partition per (owner, session id), whatever characters either holds."""

from __future__ import annotations

from stepwise.store.keys import session_pk


def test_no_two_owner_and_session_pairs_share_a_session_partition() -> None:
    # Given owners and session ids holding the characters the key separates and escapes with
    pairs = [("a#b", "c"), ("a", "b#c"), ("a%23b", "c"), ("a", "b%23c"), ("a%", "23b#c"), ("a#b#c", "")]
    # When their session partitions are named / Then each pair has its own
    assert len({session_pk(owner, session_id) for owner, session_id in pairs}) == len(pairs)
    assert session_pk("alice", "s1") == "SESSION#alice#s1"
