"""A run's conversation summary, as Compact stores it (`SUMMARY#<iteration>#<n>`) and LLMCall renders it.

What a summary must keep does not depend on the summarizer: the tool calls made, with their arguments and
whether they succeeded, are listed here from the stored messages; the facts found and what is still open
are the summarizer's notes, or a digest of the observations when its notes were unusable. The question
is not part of it: LLMCall always sends the run's opening messages as they are.
"""

from typing import Literal

from pydantic import BaseModel, Field

from stepwise.models.counts import Count
from stepwise.models.step_record import CompactionNote


class CallDigest(BaseModel, defer_build=True):
    """One tool call the summary covers: where, which tool, with what (cut short), and how it went."""

    iteration: int
    name: str
    arguments: str = Field(description="The arguments as compact JSON, cut to a few hundred characters.")
    outcome: Literal["ok", "failed", "not_run"]


class EarlierCalls(BaseModel, defer_build=True):
    """Calls of one tool older than those a summary lists one by one: how many, and how many succeeded."""

    calls: int = 0
    ok: int = 0


class ConversationSummary(BaseModel, defer_build=True):
    """What iterations 1 to `through` of a run come down to, written by Compact in `iteration` (its `n`-th
    that iteration); it replaces those iterations' messages in every later model request."""

    iteration: int
    n: int
    through: int
    calls: list[CallDigest] = Field(default_factory=list, description="The most recent calls, oldest first.")
    earlier_calls: dict[str, EarlierCalls] = Field(
        default_factory=dict, description="Older calls, counted per tool, so the item stays bounded."
    )
    facts: str = ""
    open: str = ""
    # what the compaction's trace step says; kept here so a retried Compact rebuilds the very same step
    note: CompactionNote
    input_tokens: Count = 0
    output_tokens: Count = 0
    latency_ms: float = 0
    # the summarizer's usage was not counted usably by its provider: the tokens are Stepwise's estimate
    usage_estimated: bool = False
