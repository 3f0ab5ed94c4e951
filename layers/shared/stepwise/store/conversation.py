"""The conversation store: the only code that talks to DynamoDB.

Each step's result has one commit record, put only if its key is not there yet: the model's or the
tool's message (which carries its trace step, so there is no second item to put), or the Parse
decision. Anything derived from it (corrective observations) is put the same way, before it, so a
retried step either finds its commit record and replays it, or writes everything again without
duplicating a thing. No step write touches META: usage is summed from the trace when the run ends, so
parallel tool calls never contend on one item.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from stepwise.errors import RunNotFound
from stepwise.models.messages import ChatMessage
from stepwise.models.run import Outcome, RunError, RunMeta, RunStatus, RunUsage, StoredMessage
from stepwise.models.step_record import StepRecord
from stepwise.store import keys
from stepwise.store.approvals import ApprovalStore
from stepwise.store.budget_waits import BudgetWaitStore
from stepwise.store.child_runs import ChildRunStore
from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.directory import RunDirectory
from stepwise.store.history import Conversation, HistoryCache, message_projection
from stepwise.store.item_limit import MAX_ITEM_BYTES
from stepwise.store.items import message_item, meta_item, step_item, to_message, to_meta
from stepwise.store.online_evals import OnlineEvalStore
from stepwise.store.run_facts import RunFactsReader
from stepwise.store.steering import SteeringStore
from stepwise.store.summaries import SummaryStore
from stepwise.store.table import Table
from stepwise.store.tool_attempts import ToolAttemptStore
from stepwise.store.tool_outputs import ToolOutputStore
from stepwise.store.trace import RunRecord, TraceReader, items_between
from stepwise.store.transient import condition_failed
from stepwise.store.views import IterationItems, RunRef, SessionTurn

ReadT = TypeVar("ReadT")
# The statuses of a run still going, which the loop's writes to META are conditional on.
_OPEN = {
    ":queued": "QUEUED",
    ":running": "RUNNING",
    ":waiting": "WAITING_APPROVAL",
    ":budget": "WAITING_BUDGET",
    ":paused": "PAUSED",
}
# A session entry's question and answer share its item: each is cut to fit its half.
_SESSION_QUESTION_BYTES = MAX_ITEM_BYTES // 2
_SESSION_ANSWER_BYTES = MAX_ITEM_BYTES - _SESSION_QUESTION_BYTES


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ConversationStore:
    """Runs, messages, trace steps and session turns in one DynamoDB table."""

    def __init__(self, client: Any, table_name: str, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self._db = Table(client, table_name)
        self._table = table_name
        self._clock = clock
        self._history = HistoryCache(self._db.query_items)
        self._trace = TraceReader(self._db.query_items, self._db.get_item)
        self.directory = RunDirectory(self._db, now_iso=self._now_iso)
        """Listing and cancelling runs (`stepwise.store.directory`)."""
        self.approvals = ApprovalStore(self._db, now_iso=self._now_iso)
        """Tool calls paused for approval (`stepwise.store.approvals`)."""
        self.budget_waits = BudgetWaitStore(self._db, now_iso=self._now_iso)
        """Runs waiting at their budget (`stepwise.store.budget_waits`)."""
        self.tool_attempts = ToolAttemptStore(self._db, now_iso=self._now_iso)
        """Starts of tool calls that may change something (`stepwise.store.tool_attempts`)."""
        self.summaries = SummaryStore(self._db)
        """Conversation summaries and their compaction steps (`stepwise.store.summaries`)."""
        self.child_runs = ChildRunStore(self._db, now_iso=self._now_iso)
        """Links to the child runs a run's agent calls started, and the parent's wait (`stepwise.store.child_runs`)."""
        self.run_facts = RunFactsReader(self._db)
        """An owner's recent runs as the overview counts them (`stepwise.store.run_facts`)."""
        self.online_evals = OnlineEvalStore(self._db)
        """Runs' online eval results (`stepwise.store.online_evals`)."""
        self.steering = SteeringStore(self._db, now_iso=self._now_iso)
        """Messages posted to running runs, and pauses (`stepwise.store.steering`)."""
        self.tool_outputs = ToolOutputStore(self._db)
        """Whole tool results longer than what the model received (`stepwise.store.tool_outputs`)."""

    def _now_iso(self) -> str:
        return self._clock().isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def create_run(self, meta: RunMeta, messages: list[ChatMessage], *, question: str = "") -> bool:
        """Store a new run's opening messages, its session entry, then its META; False if that id is taken.

        META is the commit record: until it is there the run does not exist for any reader, so a writer
        that dies half-way leaves only unreachable items, which TTL removes. The first message finding
        its key taken means the id belongs to another run, and nothing more is written.
        """
        for slot, message in enumerate(messages):
            item = message_item(meta.run_id, 0, slot, message, meta.expires_at)
            if not self._db.put_if_absent(item, ours_if_identical=True) and slot == 0:
                return False
        if meta.session_id:
            # the entry's question takes at most half the item, its answer (`finish_run`) the other half
            self._db.put_if_absent(
                {
                    "pk": keys.session_pk(meta.owner, meta.session_id),
                    "sk": keys.session_sk(meta.created_at, meta.run_id),
                    "run_id": meta.run_id,
                    "owner": meta.owner,
                    "created_at": meta.created_at,
                    "question": question,
                    "expires_at": meta.expires_at,
                },
                ours_if_identical=True,
                limit=_SESSION_QUESTION_BYTES,
            )
        return self._db.put_if_absent(meta_item(meta), ours_if_identical=True)

    def create_replay_run(self, meta: RunMeta, original_run_id: str, through_iteration: int) -> bool:
        """Store a replay of `original_run_id`: the original's messages of iterations 0 to
        `through_iteration` (its opening messages, then the kept iterations with their trace), its
        decisions of those iterations and the whole tool results they kept, copied as stored, under the
        new run's key and expiry; then its META. False if the new id is taken.

        As in `create_run`, META is put last: a writer that dies half-way leaves only unreachable items.
        """
        pk = keys.run_pk(original_run_id)
        ranges = [
            (keys.message_sk(0, 0), keys.message_sk(through_iteration, keys.LAST_SLOT)),
            (keys.step_prefix(1), f"{keys.step_prefix(through_iteration)}~"),
            # the whole results of those iterations' tool calls, which their copied steps count
            (f"{keys.TOOL_OUTPUT_PREFIX}{1:04d}#", f"{keys.TOOL_OUTPUT_PREFIX}{through_iteration:04d}#~"),
        ]
        for first, last in ranges:
            if first > last:
                continue
            for item in self._db.query_items(items_between(pk, first, last)):
                copied = item | {"pk": keys.run_pk(meta.run_id), "expires_at": meta.expires_at}
                if not self._db.put_if_absent(copied, ours_if_identical=True) and item["sk"] == first:
                    return False
        return self._db.put_if_absent(meta_item(meta), ours_if_identical=True)

    def get_run(self, run_id: str) -> RunMeta | None:
        """The META of a run, or None."""
        return self.directory.get_meta(run_id)

    def require_run(self, run_id: str) -> RunMeta:
        """The META of a run; `RunNotFound` if there is none."""
        meta = self.get_run(run_id)
        if meta is None:
            raise RunNotFound(f"run {run_id} not found")
        return meta

    def _update_meta(
        self,
        run_id: str,
        sets: dict[str, Any],
        condition: str,
        extra_values: dict[str, Any],
        *,
        known: RunMeta | None = None,
    ) -> RunMeta:
        """Set `sets` on META if `condition` holds; with the META as last read (`known`), the values are cut
        so that the item they make fits DynamoDB's limit."""
        key = {"pk": keys.run_pk(run_id), "sk": keys.META_SK}
        fitted = self._db.fitted_values(key, sets, rest=meta_item(known) if known else {})
        names = {f"#{name}": name for name in fitted} | {"#status": "status"}
        values = {f":{name}": value for name, value in fitted.items()}
        values |= {name: serialize_value(value) for name, value in extra_values.items()}
        expression = "SET " + ", ".join(f"#{name} = :{name}" for name in fitted)
        try:
            response = self._db.call(
                "update_item",
                TableName=self._table,
                Key=serialize_item(key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if condition_failed(exc):
                raise RunNotFound(f"run {run_id} not found or already ended") from None
            raise
        return to_meta(deserialize_item(response["Attributes"]))

    def begin_iteration(self, run_id: str, iteration: int) -> RunMeta:
        """Mark the run RUNNING at `iteration`; repeating the call with the same iteration is harmless."""
        return self._update_meta(
            run_id,
            {"iteration": iteration, "status": "RUNNING", "updated_at": self._now_iso()},
            "attribute_exists(pk) AND #status IN (:queued, :running, :waiting, :budget, :paused)"
            " AND #iteration <= :iteration",
            _OPEN,
        )

    def list_messages(self, run_id: str) -> list[StoredMessage]:
        """The whole conversation of a run, in order, read with one paginated Query (message fields only)."""
        items = self._db.query(keys.run_pk(run_id), keys.MESSAGE_PREFIX, attributes=message_projection())
        return [to_message(item) for item in items]

    def conversation(self, run_id: str) -> Conversation:
        """The same conversation and the run's request options, reading only the items this store has not
        read before (see `stepwise.store.history`); `RunNotFound` if the run has no META."""
        return self._history.conversation(run_id)

    def list_steps(
        self, run_id: str, *, iteration: int | None = None, since_iteration: int | None = None
    ) -> list[StepRecord]:
        """The trace of a run in order; only the steps of one `iteration`, or of `since_iteration` and after
        (see `stepwise.store.trace`)."""
        return self._trace.list_steps(run_id, iteration=iteration, since_iteration=since_iteration)

    def final_record(self, run_id: str, iteration: int) -> tuple[RunMeta, StepRecord | None, RunRecord]:
        """What Format reads, in one Query of the run's partition: META, the decision of `iteration` (None
        when not stored), and the whole conversation with its trace; `RunNotFound` without META."""
        partition = self._trace.partition(run_id)
        if partition.meta is None:
            raise RunNotFound(f"run {run_id} not found")
        decision = partition.decisions.get(keys.step_sk(iteration, "parse"))
        return to_meta(partition.meta), decision, partition.record

    def stored_message(self, run_id: str, iteration: int, slot: int) -> tuple[StoredMessage, StepRecord | None] | None:
        """One stored message and the step it carries (one GetItem); None when it is not stored."""
        return self._trace.stored_message(run_id, iteration, slot)

    def record_message(self, run: RunRef, iteration: int, slot: int, message: ChatMessage, step: StepRecord) -> bool:
        """Append a message a step produced, with its trace step, in one put; False if it was already there."""
        item = message_item(run.run_id, iteration, slot, message, run.expires_at)
        return self._db.put_if_absent(item | {"trace": step.model_dump_json(exclude_none=True)})

    def record_step(self, run: RunRef, step: StepRecord) -> bool:
        """Put a trace step of its own (a guardrail's); False if a retried step finds it already stored."""
        return self._db.put_if_absent(step_item(run.run_id, step, run.expires_at), ours_if_identical=True)

    def read_iteration(
        self,
        run_id: str,
        iteration: int,
        *,
        meta: bool = False,
        assistant: bool = False,
        decision: bool = False,
        previous_decision: bool = False,
        observation_slot: int | None = None,
    ) -> IterationItems:
        """The items of one iteration a step asks for, in one BatchGetItem; `RunNotFound` if META was
        asked for and is not there."""
        wanted: dict[str, str] = {}
        if meta:
            wanted["meta"] = keys.META_SK
        if assistant:
            wanted["assistant"] = keys.message_sk(iteration, keys.ASSISTANT_SLOT)
        if decision:
            wanted["decision"] = keys.step_sk(iteration, "parse")
        if previous_decision:
            wanted["previous_decision"] = keys.step_sk(iteration - 1, "parse")
        if observation_slot is not None:
            wanted["observation"] = keys.message_sk(iteration, observation_slot)
        found = self._db.batch_get(keys.run_pk(run_id), list(wanted.values()))
        if meta and keys.META_SK not in found:
            raise RunNotFound(f"run {run_id} not found")
        items = {name: found.get(sk) for name, sk in wanted.items()}
        return IterationItems(
            meta=_optional(to_meta, items.get("meta")),
            assistant=_optional(to_message, items.get("assistant")),
            assistant_step=_optional(_trace_of, items.get("assistant")),
            decision=_optional(_decision, items.get("decision")),
            previous_decision=_optional(_decision, items.get("previous_decision")),
            observation=_optional(to_message, items.get("observation")),
        )

    def record_decision(
        self, run: RunRef, step: StepRecord, corrective: list[ChatMessage], *, steps: Sequence[StepRecord] = ()
    ) -> bool:
        """Store the Parse decision after any corrective observations and the trace `steps` it implies (the
        tool policy's); False if it was already stored.

        The decision is the commit record: it is put last, so once it exists everything it implies does.
        """
        for index, message in enumerate(corrective):
            self._db.put_if_absent(
                message_item(run.run_id, step.iteration, keys.observation_slot(index), message, run.expires_at)
            )
        for implied in steps:
            self._db.put_if_absent(step_item(run.run_id, implied, run.expires_at))
        return self._db.put_if_absent(step_item(run.run_id, step, run.expires_at))

    def finish_run(
        self,
        meta: RunMeta,
        status: RunStatus,
        *,
        stop_reason: str | None,
        outcome: Outcome | None = None,
        answer: str | None = None,
        output: Any = None,
        output_error: str | None = None,
        error: RunError | None = None,
        usage: RunUsage | None = None,
        iteration: int | None = None,
        tools: list[str] | None = None,
    ) -> RunMeta:
        """Record the run's end once (status, stop reason, `outcome`, answer, the iteration it ended at, the
        `tools` it called, which a listing filters on); a repeated call returns the end already stored."""
        sets: dict[str, Any] = {"status": status, "updated_at": self._now_iso()}
        optional = {
            "iteration": iteration,
            "stop_reason": stop_reason,
            "outcome": outcome,
            "answer": answer,
            "output": None if output is None else json.dumps(output),
            "output_error": output_error,
            "error": error.model_dump(exclude_none=True) if error else None,
            "usage": usage.model_dump() if usage else None,
            "tools": tools or None,
        }
        sets |= {key: value for key, value in optional.items() if value is not None}
        if meta.session_id and answer is not None and not meta.is_terminal:
            # before the end: a client that sees the run ended and asks the session's next question at once
            # must find this answer in the session (written after, it was missing from the next run's history)
            self._record_session_answer(meta, answer)
        try:
            return self._update_meta(
                meta.run_id,
                sets,
                "attribute_exists(pk) AND #status IN (:queued, :running, :waiting, :budget, :paused)",
                _OPEN,
                known=meta,
            )
        except RunNotFound:
            return self.require_run(meta.run_id)

    def _record_session_answer(self, meta: RunMeta, answer: str) -> None:
        """Put a session run's answer on its session turn (the question is there since the run was created)."""
        assert meta.session_id is not None
        key = {"pk": keys.session_pk(meta.owner, meta.session_id), "sk": keys.session_sk(meta.created_at, meta.run_id)}
        fitted = self._db.fitted_values(key, {"answer": answer}, rest={}, limit=_SESSION_ANSWER_BYTES)
        self._db.call(
            "update_item",
            TableName=self._table,
            Key=serialize_item(key),
            UpdateExpression="SET answer = :answer",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":answer": fitted["answer"]},
        )

    def list_session_turns(self, session_id: str, owner: str) -> list[SessionTurn]:
        """The earlier runs of a session started by `owner`, oldest first: one Query of the owner's own
        partition of the session, which holds no other owner's runs."""
        return [
            SessionTurn.model_validate(item)
            for item in self._db.query(keys.session_pk(owner, session_id), keys.SESSION_RUN_PREFIX)
        ]


def _decision(item: dict[str, Any]) -> StepRecord:
    return StepRecord.model_validate_json(item["data"])


def _optional(read: Callable[[dict[str, Any]], ReadT], item: dict[str, Any] | None) -> ReadT | None:
    return read(item) if item else None


def _trace_of(item: dict[str, Any]) -> StepRecord | None:
    """The trace step a message item carries (a model call's), if it carries one."""
    return StepRecord.model_validate_json(item["trace"]) if "trace" in item else None
