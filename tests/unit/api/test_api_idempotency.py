"""`Idempotency-Key`: Powertools' idempotency records in the run table (moto), answered as the API's errors."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.api.problems import IdempotencyConflict, IdempotencyInProgress


def test_the_same_key_and_body_start_once_and_answer_the_first_response(dynamodb_table: tuple[Any, str]) -> None:
    # Given a start made once with a key
    starts = IdempotentStarts(*dynamodb_table)
    started: list[str] = []

    def start() -> dict[str, Any]:
        started.append("run")
        return {"run_id": f"run-{len(started)}"}

    first = starts.run_once(owner="key-1", key="order-1", body={"input": "hi"}, start=start)

    # When the same caller sends the same key and body again
    again = starts.run_once(owner="key-1", key="order-1", body={"input": "hi"}, start=start)

    # Then nothing more is started and the first response is answered
    assert (first, again, started) == ({"run_id": "run-1"}, {"run_id": "run-1"}, ["run"])


def test_the_same_key_with_another_body_is_a_conflict(dynamodb_table: tuple[Any, str]) -> None:
    # Given a start made once with a key
    starts = IdempotentStarts(*dynamodb_table)
    starts.run_once(owner="key-1", key="order-1", body={"input": "hi"}, start=lambda: {"run_id": "run-1"})

    # When the key comes back with another body
    # Then it is the API's 409 idempotency_conflict, and the start is not called
    with pytest.raises(IdempotencyConflict) as raised:
        starts.run_once(owner="key-1", key="order-1", body={"input": "bye"}, start=lambda: {"run_id": "run-2"})
    assert (raised.value.status, raised.value.type) == (409, "idempotency_conflict")


def test_the_same_key_while_its_first_start_runs_is_in_progress(dynamodb_table: tuple[Any, str]) -> None:
    # Given a start that is still running when the same key arrives again (the retry of a slow request)
    starts = IdempotentStarts(*dynamodb_table)
    seen: list[IdempotencyInProgress] = []

    def slow_start() -> dict[str, Any]:
        try:
            starts.run_once(owner="key-1", key="order-1", body={"input": "hi"}, start=lambda: {"run_id": "twice"})
        except IdempotencyInProgress as exc:
            seen.append(exc)
        return {"run_id": "run-1"}

    # When the first start finishes
    first = starts.run_once(owner="key-1", key="order-1", body={"input": "hi"}, start=slow_start)

    # Then the retry was the API's 409 idempotency_in_progress, and only the first start ran
    assert first == {"run_id": "run-1"}
    assert [(exc.status, exc.type) for exc in seen] == [(409, "idempotency_in_progress")]
