"""The owner's index of calls waiting for approval, against moto: listed across runs from the index alone
(never one read per run), oldest first and paged, another owner's never, and a call leaves it once answered,
settled or its run ended."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepwise.local.embedded_dynamodb import create_table_from_template
from stepwise.local.template import SamTemplate
from stepwise.models.messages import ToolCall
from stepwise.models.run import RunUsage
from stepwise.store import ConversationStore
from tests.conftest import PROJECT_ROOT
from tests.integration.test_store import make_meta

NOW = 1_900_000_000.0


@pytest.fixture(params=["moto", "dynamodb-local"])
def engine(request: pytest.FixtureRequest) -> tuple[Any, str]:
    """A DynamoDB client and a conversation table, on moto and on AWS's own DynamoDB Local: the sparse index
    is checked on the real engine too."""
    if request.param == "moto":
        client, table = request.getfixturevalue("dynamodb_table")
        return client, table
    client, table = request.getfixturevalue("dynamodb_local_table")
    return client, table


@pytest.fixture
def store(engine: tuple[Any, str]) -> ConversationStore:
    client, table = engine
    return ConversationStore(client, table, clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))


def _waiting_run(store: ConversationStore, run_id: str, *, owner: str = "alice", timeout: float = 600) -> Any:
    """A run of `owner` whose first call waits for approval until NOW + `timeout`."""
    store.create_run(make_meta(run_id, owner=owner), [])
    call = ToolCall(id=f"call_{run_id}", name="transfer", arguments={"to": "acct-1"})
    return store.approvals.request(
        run_id, 1, 0, call, owner=owner, token="t", now=NOW, timeout_at=NOW + timeout, expires_at=2_000_000_000
    )


def test_one_waiting_call_among_150_other_runs_is_listed_from_the_index_alone(
    store: ConversationStore, engine: tuple[Any, str]
) -> None:
    # Given 150 runs of alice that wait for nothing, one that waits, and a waiting run of mallory's
    for n in range(150):
        store.create_run(make_meta(f"busy-{n:03d}"), [])
    _waiting_run(store, "waits")
    _waiting_run(store, "theirs", owner="mallory")
    client, _ = engine
    requests: list[str] = []
    items_read: list[int] = []

    def count(model: Any, **_: Any) -> None:
        requests.append(model.name)

    def record_items(parsed: dict[str, Any], **_: Any) -> None:
        items_read.append(parsed["Count"])

    client.meta.events.register("before-call.dynamodb", count)
    client.meta.events.register("after-call.dynamodb.Query", record_items)
    # When alice's waiting calls are listed
    page = store.approvals.waiting("alice", limit=20, after=None, now=NOW)
    client.meta.events.unregister("before-call.dynamodb", count)
    client.meta.events.unregister("after-call.dynamodb.Query", record_items)
    # Then her one waiting call is listed with its run's profile, in one Query of one entry and one batch read
    assert [(call.run_id, call.call_id, call.profile) for call in page.calls] == [("waits", "call_waits", "default")]
    assert page.next_after is None
    assert requests == ["Query", "BatchGetItem"]
    assert items_read == [1]


def test_waiting_calls_are_listed_oldest_first_a_page_at_a_time(store: ConversationStore) -> None:
    # Given three waiting calls of alice
    for run_id in ("r1", "r2", "r3"):
        _waiting_run(store, run_id)
    # When they are listed two a page
    first = store.approvals.waiting("alice", limit=2, after=None, now=NOW)
    second = store.approvals.waiting("alice", limit=2, after=first.next_after, now=NOW)
    # Then the pages follow each other, oldest first, and the last has no cursor
    assert [call.run_id for call in first.calls] == ["r1", "r2"]
    assert ([call.run_id for call in second.calls], second.next_after) == (["r3"], None)


def test_an_answered_call_leaves_the_listing_and_comes_back_when_its_answer_is_undone(
    store: ConversationStore,
) -> None:
    # Given a waiting call, answered
    answered = store.approvals.answer(_waiting_run(store, "r1"), "approved", reason=None, by="alice")
    gone = store.approvals.waiting("alice", limit=20, after=None, now=NOW).calls
    # When the answer is undone (Step Functions could not be told)
    store.approvals.reopen(answered)
    # Then it was not listed once answered, and is listed again
    assert gone == []
    assert [call.run_id for call in store.approvals.waiting("alice", limit=20, after=None, now=NOW).calls] == ["r1"]


def test_a_settled_call_a_run_that_ended_and_a_wait_that_ran_out_are_not_listed(store: ConversationStore) -> None:
    # Given a call settled as timed out, a call of a cancelled run, one whose wait has run out, and one waiting
    store.approvals.settle(_waiting_run(store, "settled"), "timed_out", reason=None)
    _waiting_run(store, "cancelled")
    store.directory.cancel_run("cancelled", by="alice", usage=RunUsage())
    _waiting_run(store, "ran-out", timeout=5)
    _waiting_run(store, "waits")
    # When alice's waiting calls are listed 10 s later
    page = store.approvals.waiting("alice", limit=20, after=None, now=NOW + 10)
    # Then only the call still waiting is
    assert [call.run_id for call in page.calls] == ["waits"]


def test_a_table_made_before_the_index_gets_it_at_the_next_start() -> None:
    template = SamTemplate.load(PROJECT_ROOT / "template.yaml")
    older = copy.deepcopy(template)
    table = older.document["Resources"]["ConversationTable"]["Properties"]
    table["GlobalSecondaryIndexes"] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "RunsByOwner"]
    table["AttributeDefinitions"] = [
        a for a in table["AttributeDefinitions"] if not a["AttributeName"].startswith("waiting")
    ]
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        # Given a local table made from a template without the waiting calls' index
        create_table_from_template(client, older, "conversations")
        # When the store starts on it with today's template
        create_table_from_template(client, template, "conversations")
        # Then the table has both indexes, and the owner's waiting calls can be listed
        indexes = client.describe_table(TableName="conversations")["Table"]["GlobalSecondaryIndexes"]
        assert sorted(index["IndexName"] for index in indexes) == ["RunsByOwner", "WaitingApprovalsByOwner"]
        store = ConversationStore(client, "conversations", clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
        _waiting_run(store, "r1")
        assert [call.run_id for call in store.approvals.waiting("alice", limit=5, after=None, now=NOW).calls] == ["r1"]
