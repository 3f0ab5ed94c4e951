"""A tool call that may change something is sent at most once, unless its receiver recognises a repeat.

`send_at_most_once` against the store on moto, with a recording sender standing for the tool: what a
retried or resumed ToolInvoke does when the first attempt's observation was never stored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.run import RunMeta
from stepwise.steps.tool_attempts import UNKNOWN_OUTCOME, send_at_most_once
from stepwise.store import ConversationStore
from stepwise.tools.base import CallContext
from stepwise.tools.idempotency import CallEffects, idempotency_key
from stepwise.tools.observation import ToolObservation
from tests.integration.test_store import make_meta

CALL = ToolCall(id="call_1_0", name="transfer", arguments={"amount": 5})
CHANGES = CallEffects(side_effects=True)
CHANGES_HONOURING_KEYS = CallEffects(side_effects=True, key_honoured=True)


class RecordingSender:
    """Stands for the tool: records every call it is given, with its context, and answers ok."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    def __call__(self, call: ToolCall, context: CallContext) -> ToolObservation:
        self.sent.append((call.id, context.idempotency_key))
        return ToolObservation(call_id=call.id, name=call.name, ok=True, content="done", latency_ms=1)


@pytest.fixture
def run(dynamodb_table: tuple[Any, str]) -> tuple[ConversationStore, RunMeta]:
    client, table = dynamodb_table
    store = ConversationStore(client, table, clock=lambda: datetime(2026, 11, 25, 10, 0, tzinfo=UTC))
    meta = make_meta("run1")
    store.create_run(meta, [ChatMessage(role="user", content="pay bob")])
    return store, meta


def attempt_items(store: ConversationStore, client: Any, table: str) -> list[dict[str, Any]]:
    items = client.scan(TableName=table)["Items"]
    return [item for item in items if item["sk"]["S"].startswith("ATTEMPT#")]


def send(store: ConversationStore, meta: RunMeta, effects: CallEffects, sender: RecordingSender) -> Any:
    return send_at_most_once(meta, 1, 0, CALL, effects=effects, attempts=store.tool_attempts, send=sender)


def test_a_call_that_changes_nothing_is_sent_with_its_key_and_records_nothing(
    run: tuple[ConversationStore, RunMeta], dynamodb_table: tuple[Any, str]
) -> None:
    store, meta = run
    sender = RecordingSender()
    # When a call that changes nothing (a GET) is sent twice, as a retried step would
    first, second = send(store, meta, CallEffects(), sender), send(store, meta, CallEffects(), sender)
    # Then both went out with the call's key, and no attempt was written
    key = idempotency_key("run1", 1, CALL.id)
    assert sender.sent == [(CALL.id, key), (CALL.id, key)]
    assert (first.attempt, second.attempt) == (None, None)
    assert attempt_items(store, *dynamodb_table) == []


def test_a_call_that_changes_something_has_its_start_recorded_before_it_is_sent(
    run: tuple[ConversationStore, RunMeta], dynamodb_table: tuple[Any, str]
) -> None:
    store, meta = run
    sender = RecordingSender()
    # When a POST-like call is sent the first time
    sent = send(store, meta, CHANGES, sender)
    # Then it went out once, as attempt 1, and its start is stored with its key
    assert (len(sender.sent), sent.attempt, sent.observation.ok) == (1, 1, True)
    (item,) = attempt_items(store, *dynamodb_table)
    assert item["idempotency_key"]["S"] == sender.sent[0][1] == sent.idempotency_key


def test_a_resumed_call_to_a_receiver_that_honours_keys_is_sent_again_with_the_same_key(
    run: tuple[ConversationStore, RunMeta],
) -> None:
    store, meta = run
    sender = RecordingSender()
    # Given a first attempt whose observation was never stored (the step crashed after sending it)
    send(store, meta, CHANGES_HONOURING_KEYS, sender)
    # When the step runs again
    again = send(store, meta, CHANGES_HONOURING_KEYS, sender)
    # Then the call went out a second time, with the same key, as attempt 2
    assert [key for _, key in sender.sent] == [again.idempotency_key] * 2
    assert (again.attempt, again.observation.ok) == (2, True)


def test_a_resumed_call_to_a_receiver_that_cannot_recognise_a_repeat_is_not_sent_again(
    run: tuple[ConversationStore, RunMeta],
) -> None:
    store, meta = run
    sender = RecordingSender()
    # Given a first attempt whose observation was never stored
    send(store, meta, CHANGES, sender)
    # When the step runs again, twice (a retry of the retry)
    again = [send(store, meta, CHANGES, sender) for _ in range(2)]
    # Then nothing more went out, and the model is told the outcome is unknown and to check first
    assert len(sender.sent) == 1
    for each in again:
        assert (each.observation.ok, each.observation.error) == (False, UNKNOWN_OUTCOME)
        assert "may or may not have taken effect" in each.observation.content
        assert "Check whether it took effect before calling it again" in each.observation.content
