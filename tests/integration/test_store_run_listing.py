"""Finding runs in the store: each filter of a listing, pages that fill across runs that do not match, the
bounded work of one request, and the DynamoDB requests a page makes (moto; the filters DynamoDB evaluates
also on AWS's own DynamoDB Local, which checks expressions as DynamoDB does)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stepwise.models.run import RunMeta, RunStatus, RunUsage
from stepwise.store import ConversationStore
from stepwise.store.run_filters import RunFilter
from stepwise.store.run_listing import RunLister
from stepwise.store.table import Table

OWNER = "alice"


@pytest.fixture
def store(dynamodb_table: tuple[Any, str]) -> ConversationStore:
    client, table = dynamodb_table
    return ConversationStore(client, table, clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))


@pytest.fixture
def local_store(dynamodb_local_table: tuple[Any, str]) -> ConversationStore:
    """The store on AWS's DynamoDB Local, with the table template.yaml declares."""
    return ConversationStore(*dynamodb_local_table)


def stored_run(
    store: ConversationStore,
    n: int,
    *,
    status: RunStatus = "SUCCEEDED",
    deadline: float = 2_000_000_000.0,
    profile: str = "default",
    **fields: Any,
) -> RunMeta:
    """Run `n` of alice (created at second `n`: a higher `n` is newer), stored with `fields`."""
    meta = RunMeta(
        run_id=f"run-{n:03d}",
        owner=OWNER,
        profile=profile,
        status=status,
        deadline=deadline,
        created_at=f"2026-11-22T10:{n // 60:02d}:{n % 60:02d}.000Z",
        updated_at="2026-11-22T11:00:00.000Z",
        expires_at=2_000_000_000,
        **fields,
    )
    store.create_run(meta, [])
    return meta


def listed(store: ConversationStore, limit: int = 10, **filters: Any) -> list[str]:
    return [run.run_id for run in store.directory.list_runs(OWNER, limit=limit, filters=RunFilter(**filters)).runs]


@pytest.fixture
def table(dynamodb_table: tuple[Any, str]) -> Table:
    """The table `store` writes to, for a lister with a budget of its own."""
    return Table(*dynamodb_table)


@pytest.fixture
def requests_made(dynamodb_table: tuple[Any, str]) -> Iterator[list[str]]:
    """The DynamoDB operations the store's client sends from now on, counted at the wire."""
    made: list[str] = []
    client, _ = dynamodb_table

    def note(model: Any, **_: Any) -> None:
        made.append(model.name)

    client.meta.events.register("before-call.dynamodb", note)
    yield made
    client.meta.events.unregister("before-call.dynamodb", note)


def test_a_status_filter_fills_each_page_across_runs_that_do_not_match(store: ConversationStore) -> None:
    # Given 12 runs of which the three oldest failed
    for n in range(12):
        stored_run(store, n, status="FAILED" if n < 3 else "SUCCEEDED")
    # When the failed runs are listed two to a page
    first = store.directory.list_runs(OWNER, limit=2, filters=RunFilter(status="FAILED"))
    second = store.directory.list_runs(OWNER, limit=2, filters=RunFilter(status="FAILED"), before=first.next_after)
    # Then the first page is full with a cursor, and the second holds the last one, without a cursor
    assert [run.run_id for run in first.runs] == ["run-002", "run-001"] and first.next_after
    assert [run.run_id for run in second.runs] == ["run-000"] and second.next_after is None


def test_profile_and_stop_reason_filters_keep_only_their_runs(store: ConversationStore) -> None:
    # Given runs of two profiles, ended for different reasons
    stored_run(store, 1, profile="finance", stop_reason="final_answer")
    stored_run(store, 2, profile="finance", stop_reason="max_iterations")
    stored_run(store, 3, profile="default", stop_reason="max_iterations")
    # When each filter is applied, and both
    # Then each keeps its runs
    assert listed(store, profile="finance") == ["run-002", "run-001"]
    assert listed(store, stop_reason="max_iterations") == ["run-003", "run-002"]
    assert listed(store, profile="finance", stop_reason="final_answer") == ["run-001"]


def test_a_time_range_includes_its_start_and_excludes_its_end(store: ConversationStore) -> None:
    # Given runs created at seconds 10 to 14
    for n in range(10, 15):
        stored_run(store, n)
    # When the runs created from second 11 to before second 13 are listed
    found = listed(store, created_after="2026-11-22T10:00:11.000Z", created_before="2026-11-22T10:00:13.000Z")
    # Then those of seconds 11 and 12 are
    assert found == ["run-012", "run-011"]


def test_a_metadata_pair_keeps_the_runs_stored_with_it(store: ConversationStore) -> None:
    # Given runs tagged with two suites
    stored_run(store, 1, metadata={"suite": "smoke"})
    stored_run(store, 2, metadata={"suite": "nightly"})
    stored_run(store, 3)
    # When the runs of one suite are listed
    # Then only its run is, with its metadata
    page = store.directory.list_runs(OWNER, limit=5, filters=RunFilter(metadata=("suite", "smoke")))
    assert [(run.run_id, run.metadata) for run in page.runs] == [("run-001", {"suite": "smoke"})]


def test_a_tool_filter_finds_the_runs_whose_end_recorded_that_tool(store: ConversationStore) -> None:
    # Given two runs ended having called different tools, and one still open
    weather = stored_run(store, 1, status="RUNNING")
    store.finish_run(weather, "SUCCEEDED", stop_reason="final_answer", tools=["get_weather", "search"])
    mail = stored_run(store, 2, status="RUNNING")
    store.finish_run(mail, "SUCCEEDED", stop_reason="final_answer", tools=["send_mail"])
    stored_run(store, 3, status="RUNNING")
    # When the runs that called `search` are listed
    # Then the first run alone is
    assert listed(store, tool="search") == ["run-001"]


def test_text_finds_every_word_in_any_case_in_the_question_or_the_answer(store: ConversationStore) -> None:
    # Given runs whose question or answer mention Paris
    stored_run(store, 1, question="What is the weather in Paris?")
    stored_run(store, 2, question="Book a flight", answer="Booked: Lyon to PARIS, Friday.")
    stored_run(store, 3, question="What is the weather in Rome?", answer="Sunny.")
    # When the text is searched
    # Then each word must appear, in any case, in one or the other
    assert listed(store, text="paris") == ["run-002", "run-001"]
    assert listed(store, text="WEATHER paris") == ["run-001"]
    assert listed(store, text="weather berlin") == []


def test_a_lost_run_is_found_as_timed_out_and_not_as_open_on_dynamodb_local(local_store: ConversationStore) -> None:
    # Given a run still RUNNING past its deadline (lost), one RUNNING within it, and one that timed out
    stored_run(local_store, 1, status="RUNNING", deadline=1_000.0)
    stored_run(local_store, 2, status="RUNNING")
    stored_run(local_store, 3, status="TIMED_OUT")
    directory = local_store.directory
    # When the runs are listed as TIMED_OUT, and as RUNNING, counting deadlines before 2000 as lost
    timed_out = directory.list_runs(OWNER, limit=5, filters=RunFilter(status="TIMED_OUT", lost_deadline_before=2_000))
    running = directory.list_runs(OWNER, limit=5, filters=RunFilter(status="RUNNING", lost_deadline_before=2_000))
    # Then the lost run counts as TIMED_OUT, not as RUNNING
    assert [run.run_id for run in timed_out.runs] == ["run-003", "run-001"]
    assert [run.run_id for run in running.runs] == ["run-002"]


def test_a_search_whose_budget_runs_out_before_any_match_stops_without_a_cursor(
    store: ConversationStore, table: Table
) -> None:
    # Given ten runs, the oldest of which alone mentions Paris
    for n in range(10):
        stored_run(store, n, question="Paris" if n == 0 else "Rome")
    # When it is searched with a budget of four META reads
    lister = RunLister(table, OWNER, RunFilter(text="paris"), max_meta_reads=4)
    page = lister.page(limit=5, before=None, accept=lambda _run: True)
    # Then no run is returned, no cursor, and where the search stopped
    assert (page.runs, page.next_after, page.stopped_at) == ([], None, "2026-11-22T10:00:06.000Z#run-006")


def test_a_budget_spent_after_a_match_returns_it_and_continues_below_what_was_examined(
    store: ConversationStore, table: Table
) -> None:
    # Given ten runs, the newest and the oldest mentioning Paris
    for n in range(10):
        stored_run(store, n, question="Paris" if n in (0, 9) else "Rome")
    search = RunFilter(text="paris")
    # When it is searched with a budget of four META reads, then on from the cursor
    first = RunLister(table, OWNER, search, max_meta_reads=4).page(limit=5, before=None, accept=lambda _r: True)
    rest = RunLister(table, OWNER, search).page(limit=5, before=first.next_after, accept=lambda _r: True)
    # Then the first page holds the newest with a cursor, and the rest finds the oldest
    assert [run.run_id for run in first.runs] == ["run-009"]
    assert first.next_after == "2026-11-22T10:00:06.000Z#run-006"
    assert [run.run_id for run in rest.runs] == ["run-000"] and rest.next_after is None


def test_a_page_shows_question_and_usage_in_two_requests_whatever_the_page_or_index_filter(
    store: ConversationStore, requests_made: list[str]
) -> None:
    # Given 8 runs with their question and usage
    for n in range(8):
        stored_run(store, n, question=f"question {n}", usage=RunUsage(input_tokens=n, output_tokens=1, cost_usd=0.5))
    requests_made.clear()
    # When a page of 5 is listed, the next page, then a page filtered on the profile
    page = store.directory.list_runs(OWNER, limit=5)
    store.directory.list_runs(OWNER, limit=5, before=page.next_after)
    store.directory.list_runs(OWNER, limit=5, filters=RunFilter(profile="default"))
    # Then each page is one Query of the index and one BatchGetItem of the runs' META, showing their question
    assert requests_made == ["Query", "BatchGetItem"] * 3
    newest = page.runs[0]
    assert (newest.question, newest.usage and newest.usage.input_tokens) == ("question 7", 7)


def test_a_sessions_runs_are_filtered_too(store: ConversationStore) -> None:
    # Given a session with a failed and a succeeded run, and a failed run outside it
    stored_run(store, 1, status="FAILED", session_id="s1")
    stored_run(store, 2, status="SUCCEEDED", session_id="s1")
    stored_run(store, 3, status="FAILED")
    # When the session's failed runs are listed
    page = store.directory.list_runs(OWNER, limit=5, session_id="s1", filters=RunFilter(status="FAILED"))
    # Then only the session's failed run is
    assert [run.run_id for run in page.runs] == ["run-001"]
