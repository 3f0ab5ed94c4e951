"""The store never fails on content, and fails fast on what no retry can fix."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.redaction import Redactor
from stepwise.errors import StorePermanentError
from stepwise.models.messages import ChatMessage
from stepwise.store import ConversationStore
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
