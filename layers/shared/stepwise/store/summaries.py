"""Conversation summaries: one `SUMMARY#<iteration>#<n>` item per compaction, and its trace step.

The summary item is the compaction's commit record: put only if its key is new, so a retried Compact (or
two attempts racing) ends with the one summary stored first. Its trace step (`STEP#<iteration>#compaction
#<n>`, read with every other step of the trace) is built from the stored summary and put after it, by
whichever attempt gets there: the step always describes the summary that was kept. No message is ever
deleted or rewritten: the raw conversation stays whole for the trace, audit and replay.

Summaries never change once written, so a container keeps the last few it read (LLMCall reads the run's
latest summary at every iteration).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from stepwise.models.step_record import StepRecord
from stepwise.store import keys
from stepwise.store.codec import deserialize_item, serialize_item
from stepwise.store.items import step_item
from stepwise.store.table import Table
from stepwise.store.views import RunRef

if TYPE_CHECKING:
    # a compacted run's only: the summary's model loads with the first summary read (a run never compacted has
    # none to read) or recorded
    from stepwise.models.summary import ConversationSummary

SUMMARY_PREFIX = "SUMMARY#"
COMPACTION_STEP = "compaction"


def summary_sk(iteration: int, n: int) -> str:
    """Sort key of the `n`-th summary Compact wrote in `iteration`; derived from the step, so a retry finds it."""
    return f"{SUMMARY_PREFIX}{iteration:04d}#{n:02d}"


def compaction_step(summary: ConversationSummary) -> StepRecord:
    """The trace step of the compaction that wrote `summary`."""
    note = summary.note
    return StepRecord(
        iteration=summary.iteration,
        kind=COMPACTION_STEP,
        n=summary.n,
        latency_ms=summary.latency_ms,
        input_tokens=summary.input_tokens,
        output_tokens=summary.output_tokens,
        usage_estimated=summary.usage_estimated or None,
        note=f"iterations {note.first_iteration}-{note.through_iteration} summarized ({note.reason}), "
        f"about {note.tokens_before} -> {note.tokens_after} tokens, "
        + (f"by {note.model}" if note.source == "model" else "a digest (the summarizer's notes were unusable)"),
        compaction=note,
    )


class SummaryStore:
    """Summary items of the conversation table, and the compaction steps that go with them."""

    def __init__(
        self,
        table: Table,
        *,
        max_cached: int = 32,
    ) -> None:
        self._db = table
        self._cache: OrderedDict[tuple[str, str], ConversationSummary] = OrderedDict()
        self._max_cached = max_cached
        self._lock = threading.Lock()

    def get(self, run_id: str, iteration: int, n: int) -> ConversationSummary | None:
        """The summary stored under (`iteration`, `n`), or None (one consistent GetItem unless cached)."""
        key = (run_id, summary_sk(iteration, n))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        item = self._db.call(
            "get_item",
            TableName=self._db.name,
            Key=serialize_item({"pk": keys.run_pk(run_id), "sk": key[1]}),
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return None
        from stepwise.models.summary import ConversationSummary

        summary = ConversationSummary.model_validate_json(deserialize_item(item)["data"])
        self._remember(key, summary)
        return summary

    def record(self, run: RunRef, summary: ConversationSummary) -> ConversationSummary:
        """Store `summary` unless one is stored under its key, then its trace step; the summary stored
        (this one, or the one an earlier attempt put first)."""
        sort_key = summary_sk(summary.iteration, summary.n)
        item = {
            "pk": keys.run_pk(run.run_id),
            "sk": sort_key,
            "data": summary.model_dump_json(exclude_defaults=True),
            "expires_at": run.expires_at,
        }
        stored = summary
        if not self._db.put_if_absent(item):
            found = self.get(run.run_id, summary.iteration, summary.n)
            stored = found if found is not None else summary
        self._db.put_if_absent(step_item(run.run_id, compaction_step(stored), run.expires_at))
        self._remember((run.run_id, sort_key), stored)
        return stored

    def _remember(self, key: tuple[str, str], summary: ConversationSummary) -> None:
        with self._lock:
            self._cache[key] = summary
            self._cache.move_to_end(key)
            while len(self._cache) > self._max_cached:
                self._cache.popitem(last=False)
