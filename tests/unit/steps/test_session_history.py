"""A session's earlier turns, carried by tokens: the newest that fit, oldest dropped first."""

from __future__ import annotations

from stepwise.steps.runs import session_history
from stepwise.steps.token_estimate import message_tokens
from stepwise.store import SessionTurn


def turns(count: int, answer_chars: int) -> list[SessionTurn]:
    return [
        SessionTurn(
            run_id=f"r{index}",
            created_at=f"2026-01-01T00:00:{index:02d}Z",
            question=f"Q{index}?",
            answer="a" * answer_chars,
        )
        for index in range(count)
    ]


def test_the_newest_turns_that_fit_the_budget_are_carried_oldest_first() -> None:
    # Given 40 earlier turns of about 1,000 tokens each, and a budget of 5,000 tokens
    history = session_history(turns(40, 3000), 5000, "en")
    # Then the newest four exchanges are carried, in order, within the budget
    assert [message.content for message in history if message.role == "user"] == ["Q36?", "Q37?", "Q38?", "Q39?"]
    assert sum(message_tokens(message) for message in history) <= 5000


def test_a_last_answer_longer_than_the_budget_is_carried_cut_to_fit_with_a_marker() -> None:
    # Given a session whose last answer alone is about 10,000 tokens, and a budget of 2,000
    history = session_history(turns(3, 30_000), 2000, "en")
    # Then only the last exchange is carried, its answer cut to fit and saying so
    assert [message.content for message in history if message.role == "user"] == ["Q2?"]
    assert "characters cut here to fit the model's context window" in history[1].content
    assert sum(message_tokens(message) for message in history) <= 2000


def test_a_budget_of_zero_carries_no_earlier_turn() -> None:
    # Given a profile that carries no earlier turns; Then none is carried
    assert session_history(turns(5, 10), 0, "en") == []
