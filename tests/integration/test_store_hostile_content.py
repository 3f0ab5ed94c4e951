"""The store never fails on content, and fails fast on what no retry can fix."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.redaction import Redactor
from stepwise.errors import StorePermanentError
from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.step_record import StepRecord
from stepwise.store import ConversationStore
from stepwise.store.item_limit import MAX_ITEM_BYTES, item_size
from tests.integration.test_store import make_meta


@pytest.fixture
def store(dynamodb_table: tuple[Any, str]) -> ConversationStore:
    client, table = dynamodb_table
    return ConversationStore(client, table, clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))


def test_a_message_with_lone_surrogates_and_nul_is_stored_with_replacement_characters(store: ConversationStore) -> None:
    # Given a message that slipped past every boundary with a lone surrogate and a NUL
    message = ChatMessage(role="user", content="a\ud800b\x00c")

    # When the run is created
    created = store.create_run(make_meta(), [message], question="q\udfff")

    # Then the write succeeded and the characters read back as U+FFFD
    assert created
    assert [stored.content for stored in store.list_messages("run1")] == ["a\ufffdb\ufffdc"]


def test_a_validation_error_from_dynamodb_fails_at_once_with_its_reason() -> None:
    # Given DynamoDB refuses a write as invalid (it would refuse it every time)
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_client_error(
        "put_item", service_error_code="ValidationException", service_message="Item size has exceeded the maximum"
    )

    # When the store writes a run, Then the one answer is a permanent error that says why
    with stubber, pytest.raises(StorePermanentError, match="ValidationException: Item size has exceeded"):
        ConversationStore(client, "conversations").create_run(make_meta(), [ChatMessage(role="user", content="q")])
    # And it was asked once: the stubber has no answer left over and was not asked for another
    stubber.assert_no_pending_responses()


def test_a_known_secret_is_redacted_from_whatever_is_stored(store: ConversationStore) -> None:
    # Given a redactor alive in the process that knows a secret
    redactor = Redactor(["store-canary-5e8f1a"])

    # When a message holding the secret base64-encoded reaches the store (no boundary redacted it)
    store.create_run(make_meta(), [ChatMessage(role="user", content="token c3RvcmUtY2FuYXJ5LTVlOGYxYQ== end")])

    # Then the stored message holds the redaction mark instead (the last character and the padding also
    # depend on what follows the secret, so they stay)
    assert [stored.content for stored in store.list_messages("run1")] == ["token ***Q== end"]
    assert len(redactor) > 0


def _stored_size(dynamodb_table: tuple[Any, str], pk: str, sk: str) -> int:
    client, table = dynamodb_table
    return item_size(client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"])


def test_a_message_over_400_kb_is_written_cut_and_marked_not_refused(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a model message of 300,000 two-byte characters (600 KB) beside a tool call
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    message = ChatMessage(role="assistant", content="é" * 300_000, tool_calls=[call])
    # When it is recorded
    recorded = store.record_message(meta, 1, 0, message, StepRecord(iteration=1, kind="llm"))
    # Then it was written, within DynamoDB's limit, its text cut with a marker and its call whole
    assert recorded
    assert _stored_size(dynamodb_table, "RUN#run1", "MSG#0001#000") <= MAX_ITEM_BYTES
    stored = store.list_messages("run1")[1]
    assert stored.content.startswith("éé") and stored.content.endswith("did not fit DynamoDB's 400 KB item limit]")
    assert stored.tool_calls == [call]


def test_an_outcome_over_400_kb_is_recorded_cut_and_marked(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run whose answer is 200 KB and its structured output 300 KB
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    # When its outcome is recorded
    finished = store.finish_run(
        meta, "SUCCEEDED", stop_reason="final_answer", answer="a" * 200_000, output={"text": "o" * 300_000}
    )
    # Then the run is SUCCEEDED within DynamoDB's limit, the larger (the output) cut inside its JSON with a marker
    assert finished.status == "SUCCEEDED"
    assert _stored_size(dynamodb_table, "RUN#run1", "META") <= MAX_ITEM_BYTES
    assert isinstance(finished.output, dict) and finished.output["text"].endswith("400 KB item limit]")
    assert finished.answer == "a" * 200_000


def test_a_session_answer_over_half_an_item_is_kept_cut_for_the_next_turn(store: ConversationStore) -> None:
    # Given a session run whose question and answer are 300 KB each
    meta = make_meta("r1", session_id="s1")
    store.create_run(meta, [], question="q" * 300_000)
    # When it ends
    store.finish_run(meta, "SUCCEEDED", stop_reason="final_answer", answer="a" * 300_000)
    # Then the session keeps both, each cut to its half of the item
    (turn,) = store.list_session_turns("s1", "alice")
    assert turn.question.endswith("400 KB item limit]") and turn.answer is not None
    assert turn.answer.endswith("400 KB item limit]")
    assert len(turn.question) + len(turn.answer) <= MAX_ITEM_BYTES
