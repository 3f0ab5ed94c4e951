"""The conversation store against moto: keys, idempotent appends, pagination, outcomes, sessions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.errors import RunNotFound, StoreTransientError
from stepwise.models.messages import ChatMessage, ReasoningBlock, ToolCall
from stepwise.models.run import RunMeta, RunUsage
from stepwise.models.step_record import StepRecord, usage_of_steps
from stepwise.steps.api.events import deliverable_steps
from stepwise.store import ConversationStore


def make_meta(run_id: str = "run1", *, session_id: str | None = None, owner: str = "alice") -> RunMeta:
    return RunMeta(
        run_id=run_id,
        owner=owner,
        profile="default",
        session_id=session_id,
        deadline=2_000_000_000.0,
        created_at=f"2026-11-22T10:00:00.000Z-{run_id}",
        updated_at="2026-11-22T10:00:00.000Z",
        expires_at=2_000_000_000,
    )


@pytest.fixture
def store(dynamodb_table: tuple[Any, str]) -> ConversationStore:
    client, table = dynamodb_table
    return ConversationStore(client, table, clock=lambda: datetime(2026, 11, 22, 10, 0, tzinfo=UTC))


def test_a_created_run_reads_back_queued_with_its_opening_messages(store: ConversationStore) -> None:
    # Given a new run with one user message
    store.create_run(make_meta(), [ChatMessage(role="user", content="hello")])
    # When it is read back
    meta = store.require_run("run1")
    messages = store.list_messages("run1")
    # Then it is QUEUED at iteration 0 with its message at iteration 0, slot 0
    assert (meta.status, meta.iteration, meta.owner) == ("QUEUED", 0, "alice")
    assert [(m.role, m.content, m.iteration, m.slot) for m in messages] == [("user", "hello", 0, 0)]


def test_creating_the_same_run_twice_is_refused_and_writes_nothing(store: ConversationStore) -> None:
    # Given a run
    assert store.create_run(make_meta(), [ChatMessage(role="user", content="first")])
    # When a run with the same id is created again with other messages
    created = store.create_run(make_meta(), [ChatMessage(role="user", content="second"), ChatMessage(role="user")])
    # Then it is refused and the original conversation is unchanged
    assert created is False
    assert [m.content for m in store.list_messages("run1")] == ["first"]


def test_a_retried_completion_is_stored_once_and_counted_once(store: ConversationStore) -> None:
    # Given a run
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    message = ChatMessage(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="t", arguments={"a": 1})])
    step = StepRecord(iteration=1, kind="llm", latency_ms=5, input_tokens=10, output_tokens=3)
    # When the same completion is recorded twice (a retried LLMCall), the second time with other figures
    first = store.record_message(meta, 1, 0, message, step)
    second = store.record_message(meta, 1, 0, message, step.model_copy(update={"input_tokens": 99}))
    # Then the second write changes nothing: one message, one step, usage counted once
    assert (first, second) == (True, False)
    assert len(store.list_messages("run1")) == 2
    assert usage_of_steps(store.list_steps("run1")) == RunUsage(input_tokens=10, output_tokens=3, llm_calls=1, llm_ms=5)
    assert store.list_messages("run1")[1].tool_calls[0].arguments == {"a": 1}


def test_a_message_and_its_trace_step_are_one_item(store: ConversationStore, dynamodb_table: tuple[Any, str]) -> None:
    # Given a run
    client, table = dynamodb_table
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    step = StepRecord(iteration=1, kind="tool", n=0, latency_ms=7, ok=True)
    # When a tool's observation is recorded
    store.record_message(meta, 1, 1, ChatMessage(role="tool", content="obs", tool_call_id="c"), step)
    # Then one item holds both, so no attempt can store one without the other
    keys = [item["sk"]["S"] for item in client.scan(TableName=table)["Items"] if item["pk"]["S"] == "RUN#run1"]
    assert sorted(keys) == ["META", "MSG#0000#000", "MSG#0001#001"]
    assert [s.latency_ms for s in store.list_steps("run1")] == [7]


def test_the_trace_lists_model_parse_and_tool_steps_in_step_order(store: ConversationStore) -> None:
    # Given an iteration's tool observation, decision and model message, stored in that order
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    store.record_message(meta, 1, 1, ChatMessage(role="tool", content="o", tool_call_id="c"), tool_step(1))
    store.record_decision(meta, StepRecord(iteration=1, kind="parse", decision="tool_calls"), [])
    store.record_message(meta, 1, 0, ChatMessage(role="assistant", content="a"), StepRecord(iteration=1, kind="llm"))
    # When the trace is read
    steps = store.list_steps("run1")
    # Then it is in the order the steps ran: model, parse, tool
    assert [step.kind for step in steps] == ["llm", "parse", "tool"]


def tool_step(iteration: int) -> StepRecord:
    return StepRecord(iteration=iteration, kind="tool", n=0)


def llm_step(iteration: int) -> StepRecord:
    return StepRecord(iteration=iteration, kind="llm")


def test_a_cached_conversation_reads_only_what_is_new_and_stays_complete(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a conversation read once by this store
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    store.conversation("run1")
    # When messages are added and the conversation is read again
    for iteration in (1, 2):
        observation = ChatMessage(role="tool", content=f"o{iteration}")
        store.record_message(meta, iteration, 1, observation, tool_step(iteration))
    client, _ = dynamodb_table
    returned: list[int] = []

    def count_items(parsed: dict[str, Any], **_: Any) -> None:
        returned.append(len(parsed.get("Items", [])))

    client.meta.events.register("after-call.dynamodb.Query", count_items)
    contents = [m.content for m in store.conversation("run1").messages]
    client.meta.events.unregister("after-call.dynamodb.Query", count_items)
    # Then it is the same conversation a full read gives, read from the last cached message on
    assert contents == [m.content for m in store.list_messages("run1")] == ["q", "o1", "o2"]
    assert returned == [3]


def test_a_cached_conversation_that_no_longer_matches_the_table_is_read_again(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a conversation read once by this store, whose run then expired and was created anew under its id
    client, table = dynamodb_table
    store.create_run(make_meta(), [ChatMessage(role="user", content="old question")])
    store.conversation("run1")
    for sk in ("META", "MSG#0000#000"):
        client.delete_item(TableName=table, Key={"pk": {"S": "RUN#run1"}, "sk": {"S": sk}})
    store.create_run(make_meta(), [ChatMessage(role="user", content="new question")])
    # When the conversation is read again
    contents = [m.content for m in store.conversation("run1").messages]
    # Then it is the new run's, not the cached one's
    assert contents == ["new question"]


def test_messages_come_back_in_conversation_order_past_nine_iterations(store: ConversationStore) -> None:
    # Given messages written out of order across iterations 2..11 (slot numbers beyond 9 too)
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    for iteration in (11, 2, 10, 9):
        for index in (10, 0):
            store.record_message(
                meta,
                iteration,
                index + 1,
                ChatMessage(role="tool", content=f"{iteration}.{index}", tool_call_id="c"),
                StepRecord(iteration=iteration, kind="tool", n=index),
            )
    # When the conversation is read
    contents = [m.content for m in store.list_messages("run1")]
    # Then it is in (iteration, slot) order
    assert contents == ["q", "2.0", "2.10", "9.0", "9.10", "10.0", "10.10", "11.0", "11.10"]


def test_a_conversation_larger_than_one_query_page_is_read_whole(store: ConversationStore) -> None:
    # Given 30 observations of 60 KB each (1.8 MB, more than one 1 MB Query page)
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    for iteration in range(1, 31):
        store.record_message(
            meta,
            iteration,
            1,
            ChatMessage(role="tool", content="x" * 60_000, tool_call_id="c"),
            StepRecord(iteration=iteration, kind="tool", n=0),
        )
    # When it is read
    messages = store.list_messages("run1")
    # Then every message is there
    assert len(messages) == 31


def test_finishing_a_run_twice_keeps_the_first_outcome(store: ConversationStore) -> None:
    # Given a finished run
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    store.finish_run(meta, "SUCCEEDED", stop_reason="final_answer", answer="42")
    # When a late failure tries to finish it again
    again = store.finish_run(meta, "FAILED", stop_reason="error", answer="other")
    # Then the stored outcome is the first one
    assert (again.status, again.answer) == ("SUCCEEDED", "42")


def test_an_ended_run_cannot_start_another_iteration(store: ConversationStore) -> None:
    # Given a finished run
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    store.finish_run(store.require_run("run1"), "SUCCEEDED", stop_reason="final_answer", answer="a")
    # When an iteration is begun
    # Then it is refused
    with pytest.raises(RunNotFound):
        store.begin_iteration("run1", 1)


def test_session_turns_are_visible_to_their_owner_only(store: ConversationStore) -> None:
    # Given two runs in session s1, one by alice (answered) and one by mallory
    alice = make_meta("r1", session_id="s1")
    store.create_run(alice, [ChatMessage(role="user", content="alice asks")], question="alice asks")
    store.finish_run(alice, "SUCCEEDED", stop_reason="final_answer", answer="alice hears")
    store.create_run(make_meta("r2", session_id="s1", owner="mallory"), [], question="mallory asks")
    # When alice's turns of s1 are listed
    turns = store.list_session_turns("s1", "alice")
    # Then she sees only her own question and answer
    assert [(t.question, t.answer) for t in turns] == [("alice asks", "alice hears")]


def test_a_session_runs_answer_is_in_its_session_before_its_end_is_recorded(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run of session s1, and a reader of the session's turns at the moment the run's end is written
    client, _ = dynamodb_table
    run = make_meta("r1", session_id="s1")
    store.create_run(run, [ChatMessage(role="user", content="alice asks")], question="alice asks")
    seen_at_the_end: list[list[tuple[str, str | None]]] = []

    def before_update(params: dict[str, Any], **_: Any) -> None:
        if params["Key"]["sk"] == {"S": "META"}:
            seen_at_the_end.append([(t.question, t.answer) for t in store.list_session_turns("s1", "alice")])

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before_update)
    # When the run ends with its answer
    store.finish_run(run, "SUCCEEDED", stop_reason="final_answer", answer="alice hears")
    # Then a client that sees it ended and asks the session's next question at once finds the answer there
    assert seen_at_the_end == [[("alice asks", "alice hears")]]


def test_reading_one_owners_session_reads_none_of_another_owners_200_runs_under_its_id(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given alice's run in session s1, then 200 runs mallory made under the same session id
    store.create_run(make_meta("alice-1", session_id="s1"), [], question="alice asks")
    for n in range(200):
        store.create_run(make_meta(f"mallory-{n:03d}", session_id="s1", owner="mallory"), [], question="hi")
    client, _ = dynamodb_table
    partitions: list[str] = []
    items_read: list[int] = []

    def record_key(params: dict[str, Any], **_: Any) -> None:
        partitions.append(params["ExpressionAttributeValues"][":pk"]["S"])

    def record_items(parsed: dict[str, Any], **_: Any) -> None:
        items_read.append(parsed["ScannedCount"])

    client.meta.events.register("provide-client-params.dynamodb.Query", record_key)
    client.meta.events.register("after-call.dynamodb.Query", record_items)
    # When alice's session is read for her next turn, and listed one run a page
    turns = store.list_session_turns("s1", "alice")
    page = store.directory.list_runs("alice", limit=1, session_id="s1")
    client.meta.events.unregister("provide-client-params.dynamodb.Query", record_key)
    client.meta.events.unregister("after-call.dynamodb.Query", record_items)
    # Then each read queried her own partition of the session and read her one item only
    assert [turn.question for turn in turns] == ["alice asks"]
    assert [run.run_id for run in page.runs] == ["alice-1"] and page.next_after is None
    assert partitions == ["SESSION#alice#s1", "SESSION#alice#s1"]
    assert items_read == [1, 1]


def test_throttling_after_the_sdk_retries_is_a_transient_store_error() -> None:
    # Given DynamoDB answers GetItem with ProvisionedThroughputExceededException
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_client_error("get_item", service_error_code="ProvisionedThroughputExceededException")
    # When the store reads a run
    # Then the error is StoreTransientError, which the state machine retries
    with stubber, pytest.raises(StoreTransientError):
        ConversationStore(client, "conversations").get_run("run1")


def test_an_unreachable_endpoint_after_the_sdk_retries_is_a_transient_store_error() -> None:
    # Given a DynamoDB endpoint nobody listens on, and an SDK that tries once
    from botocore.config import Config

    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=1),
    )
    # When the store reads a run
    # Then the error is StoreTransientError, which the state machine retries
    with pytest.raises(StoreTransientError):
        ConversationStore(client, "conversations").get_run("run1")


def test_a_create_whose_first_answer_was_lost_is_still_this_creators_run(store: ConversationStore) -> None:
    # Given a run whose creation reached DynamoDB once already (the SDK retried after a lost answer)
    meta = make_meta()
    messages = [ChatMessage(role="user", content="q")]
    store.create_run(meta, messages)
    # When the same creation is written again
    created = store.create_run(meta, messages)
    # Then it is recognised as the same run rather than refused as a taken id
    assert created is True
    assert [m.content for m in store.list_messages("run1")] == ["q"]


def test_the_trace_of_one_iteration_is_read_without_the_others(store: ConversationStore) -> None:
    # Given tool steps in iterations 1, 2 and 10
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    for iteration in (1, 2, 10):
        step = StepRecord(iteration=iteration, kind="tool", n=0)
        store.record_message(meta, iteration, 1, ChatMessage(role="tool", content="o", tool_call_id="c"), step)
    # When the trace of iteration 1 is read
    steps = store.list_steps("run1", iteration=1)
    # Then it holds that iteration's step only (not iteration 10's, whose key shares the digit)
    assert [step.iteration for step in steps] == [1]


def test_the_trace_since_an_iteration_leaves_out_the_iterations_before_it(store: ConversationStore) -> None:
    # Given tool steps in iterations 1, 2 and 10
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    for iteration in (1, 2, 10):
        step = StepRecord(iteration=iteration, kind="tool", n=0)
        store.record_message(meta, iteration, 1, ChatMessage(role="tool", content="o", tool_call_id="c"), step)
    # When the trace since iteration 2 is read
    steps = store.list_steps("run1", since_iteration=2)
    # Then it holds iteration 2 and every later one, in order, and nothing before
    assert [step.iteration for step in steps] == [2, 10]


def test_a_trace_read_while_an_iteration_is_stored_delivers_a_prefix_of_the_trace(
    store: ConversationStore, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run, and a whole iteration (model call, decision, tool call, next model call) that the
    # state machine stores between the two Queries of a trace read
    client, _ = dynamodb_table
    store.create_run(make_meta(), [ChatMessage(role="user", content="q")])
    meta = store.require_run("run1")
    queries = 0

    def store_an_iteration_before_the_second_query(**_: Any) -> None:
        nonlocal queries
        queries += 1
        if queries != 2:
            return
        store.record_message(meta, 1, 0, ChatMessage(role="assistant", content="a"), llm_step(1))
        store.record_decision(meta, StepRecord(iteration=1, kind="parse", calls=[{"id": "c"}]), [])
        store.record_message(meta, 1, 1, ChatMessage(role="tool", content="o", tool_call_id="c"), tool_step(1))
        store.record_message(meta, 2, 0, ChatMessage(role="assistant", content="b"), llm_step(2))

    client.meta.events.register("before-call.dynamodb.Query", store_an_iteration_before_the_second_query)
    # When a follower reads the trace then, and again once everything is stored
    during = deliverable_steps(store.list_steps("run1"), ended=False)
    after = deliverable_steps(store.list_steps("run1"), ended=False)
    # Then what it could deliver during the writes is a prefix of the trace: no step is skipped by a cursor
    kinds = [(step.kind, step.iteration) for step in after]
    assert kinds == [("llm", 1), ("parse", 1), ("tool", 1), ("llm", 2)]
    assert [(step.kind, step.iteration) for step in during] == kinds[: len(during)]


def test_an_assistant_messages_reasoning_is_kept_apart_signature_included_and_shown_as_a_step(
    store: ConversationStore,
) -> None:
    # Given a model message that called a tool after a signed thinking block and a redacted one
    store.create_run(make_meta(), [ChatMessage(role="user", content="Weather?")])
    reasoning = [
        ReasoningBlock(text="Paris needs the tool.", signature="EqQBCgIYAhIM"),
        ReasoningBlock(redacted="ZW5jcnlwdGVk"),
    ]
    message = ChatMessage(
        role="assistant",
        content="",
        tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})],
        reasoning=reasoning,
    )
    store.record_message(make_meta(), 1, 0, message, StepRecord(iteration=1, kind="llm", output_tokens=90))
    # When the conversation and the trace are read back
    stored = store.conversation("run1").messages[-1]
    steps = store.list_steps("run1")
    # Then the blocks come back exactly, apart from the content, and the trace shows them after the call
    assert (stored.content, stored.reasoning) == ("", reasoning)
    assert [step.kind for step in steps] == ["llm", "reasoning"]
    assert steps[1].thought == "Paris needs the tool."
    assert "1 redacted block" in (steps[1].note or "") and "1 signed block" in (steps[1].note or "")
