"""What a listing of runs may be narrowed to, and where each filter is answered (docs/architecture.md,
"Listing runs").

Status, profile and stop reason are attributes the owner index projects: DynamoDB drops what does not
match as it reads the index (a FilterExpression), so a page holds only matches and no META is read for
the others. The time range is the index's sort key (`run_order` begins with the creation time): a key
condition, so nothing outside it is read at all. Metadata, the tools called and the text of the question
and answer live on META only (the index's projection cannot change once deployed): each candidate's META
is read, in batches, and matched here, within a bounded number of reads per request.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from pydantic import BaseModel, Field

from stepwise.models.run import OPEN_STATUSES, RunStatus, StopReason
from stepwise.store.codec import serialize_value

# Bounds `run_order`'s range when no cursor or time does: above every creation time.
_HIGHEST_ORDER = "~"


class RunFilter(BaseModel, defer_build=True):
    """The runs a listing keeps; every field set must hold (None: any)."""

    status: RunStatus | None = None
    # An open run whose deadline is before this is reported TIMED_OUT (lost), so it is listed as such.
    lost_deadline_before: float | None = None
    profile: str | None = None
    stop_reason: StopReason | None = None
    # ISO-8601 times in the stored format (`2026-11-22T10:00:00.000Z`): created at or after, strictly before.
    created_after: str | None = None
    created_before: str | None = None
    tool: str | None = None
    metadata: tuple[str, str] | None = None
    # Case-insensitive words that must each appear in the question (its listed part) or the answer.
    text: str | None = Field(default=None, min_length=1)

    @property
    def reads_meta(self) -> bool:
        """Whether a candidate's META must be read to tell whether it matches."""
        return self.tool is not None or self.metadata is not None or self.text is not None

    def order_range(self, before: str | None) -> tuple[str | None, str] | None:
        """The `run_order` range to read below the cursor `before`: its low bound (inclusive; None when open)
        and its high bound; None when the range is empty."""
        high = min(before or _HIGHEST_ORDER, self.created_before or _HIGHEST_ORDER)
        low = self.created_after
        return None if low is not None and low > high else (low, high)

    def index_expression(self) -> tuple[str, dict[str, str], dict[str, Any]] | None:
        """The FilterExpression over the owner index's projected attributes (None when it filters
        nothing), with its names and values."""
        clauses: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        if self.status is not None:
            names["#status"] = "status"
            values[":status"] = serialize_value(self.status)
            clauses.append(self._status_clause(names, values))
        for name in ("profile", "stop_reason"):
            wanted = getattr(self, name)
            if wanted is not None:
                names[f"#{name}"] = name
                values[f":{name}"] = serialize_value(wanted)
                clauses.append(f"#{name} = :{name}")
        return (" AND ".join(clauses), names, values) if clauses else None

    def _status_clause(self, names: dict[str, str], values: dict[str, Any]) -> str:
        if self.lost_deadline_before is None or not (self.status == "TIMED_OUT" or self.status in OPEN_STATUSES):
            return "#status = :status"
        names["#deadline"] = "deadline"
        values[":lost"] = serialize_value(self.lost_deadline_before)
        if self.status == "TIMED_OUT":
            opens = {f":open{index}": serialize_value(status) for index, status in enumerate(OPEN_STATUSES)}
            values |= opens
            return f"(#status = :status OR (#status IN ({', '.join(opens)}) AND #deadline < :lost))"
        return "(#status = :status AND #deadline >= :lost)"

    def matches_entry(self, entry: dict[str, Any]) -> bool:
        """What `index_expression` keeps, told here for entries read without it (a session's META items)."""
        if self.profile is not None and entry.get("profile") != self.profile:
            return False
        if self.stop_reason is not None and entry.get("stop_reason") != self.stop_reason:
            return False
        return self.status is None or self._shown_status(entry) == self.status

    def _shown_status(self, entry: dict[str, Any]) -> str:
        status = str(entry.get("status"))
        lost = self.lost_deadline_before
        if lost is not None and status in OPEN_STATUSES and float(entry.get("deadline", 0)) < lost:
            return "TIMED_OUT"
        return status

    def matches_meta(self, meta: dict[str, Any]) -> bool:
        """Whether a run's META (the attributes `META_FILTER_ATTRIBUTES` names) has the metadata pair, the
        tool and the words asked for."""
        if self.metadata is not None:
            key, value = self.metadata
            if (meta.get("metadata") or {}).get(key) != value:
                return False
        if self.tool is not None and self.tool not in (meta.get("tools") or []):
            return False
        if self.text is not None:
            searched = _folded(f"{meta.get('question') or ''}\n{meta.get('answer') or ''}")
            return all(word in searched for word in _folded(self.text).split())
        return True


def _folded(text: str) -> str:
    """Text as a search compares it: case folded and in one Unicode form, so a word typed decomposed (`e` and a
    combining accent, as macOS sends it) or full-width finds the same word stored composed."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


LISTED_ATTRIBUTES = ("run_id", "metadata", "outcome", "question", "usage", "tools")
"""What a listing reads of each run's META beside the index entry: what the list shows."""
META_FILTER_ATTRIBUTES = (*LISTED_ATTRIBUTES, "answer")
"""What a listing reads of a candidate's META to match metadata, tools and text."""
