"""Judging one run after a fault: did it end, is its conversation whole, and is its outcome the right one.

A run is *lost* when it is not in a terminal status, or when its conversation is missing a message the
scenario must produce or holds one it must not (a duplicate written by a retried step, or a step that ran
twice). A run that ended whole but with another outcome than the scenario's (wrong status, stop reason,
answer, error, or counters that show a step counted twice) is *unexpected*. Either fails the test.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal

from stepwise.models.run import RunMeta, StoredMessage
from stepwise.store.conversation import ConversationStore


class Outcome(enum.Enum):
    """Where a run lands in the table."""

    SUCCEEDED = "succeeded"
    FAILED_AS_EXPECTED = "failed as expected"
    LOST = "lost"
    UNEXPECTED = "unexpected"


@dataclass(frozen=True)
class Contains:
    """Message content that must hold every one of `fragments` (tool observations vary in detail), and
    be at most `max_chars` long when that is given."""

    fragments: tuple[str, ...]
    max_chars: int | None = None

    def problems_with(self, content: str) -> list[str]:
        """What `content` lacks, or how it is too long."""
        problems = [f"lacks {fragment!r}" for fragment in self.fragments if fragment not in content]
        if self.max_chars is not None and len(content) > self.max_chars:
            problems.append(f"is {len(content)} characters long, more than {self.max_chars}")
        return problems


@dataclass(frozen=True)
class ExpectedMessage:
    """One message the conversation must hold at (iteration, slot)."""

    iteration: int
    slot: int
    role: Literal["user", "assistant", "tool"]
    content: str | Contains
    tool_calls: tuple[str, ...] = ()

    def problems_with(self, message: StoredMessage) -> list[str]:
        """How `message` (found at this message's key) differs from what was expected."""
        where = f"message {self.iteration}/{self.slot}"
        problems: list[str] = []
        if isinstance(self.content, Contains):
            problems += [f"{where} {problem}" for problem in self.content.problems_with(message.content)]
        elif message.content != self.content:
            problems.append(f"{where} is {message.content[:80]!r}, expected {self.content[:80]!r}")
        names = tuple(call.name for call in message.tool_calls)
        if names != self.tool_calls:
            problems.append(f"{where} calls {names}, expected {self.tool_calls}")
        return problems


def question(text: str) -> ExpectedMessage:
    """The caller's question, stored when the run is created."""
    return ExpectedMessage(0, 0, "user", text)


def reply(iteration: int, content: str, *tool_calls: str) -> ExpectedMessage:
    """The model's message of an iteration (with the names of the tools it calls, if any)."""
    return ExpectedMessage(iteration, 0, "assistant", content, tool_calls)


def observation(iteration: int, *fragments: str, call_index: int = 0, max_chars: int | None = None) -> ExpectedMessage:
    """The observation of a tool call of an iteration, holding these fragments (and at most `max_chars` long)."""
    return ExpectedMessage(iteration, call_index + 1, "tool", Contains(fragments, max_chars))


@dataclass(frozen=True)
class ExpectedRun:
    """How a run of a scenario must end."""

    conversation: tuple[ExpectedMessage, ...]
    status: Literal["SUCCEEDED", "FAILED"] = "SUCCEEDED"
    stop_reason: str = "final_answer"
    answer: str | None = None
    error_type: str | None = None
    error_fragment: str | None = None

    @property
    def outcome(self) -> Outcome:
        """The table column a run ending this way goes to."""
        return Outcome.SUCCEEDED if self.status == "SUCCEEDED" else Outcome.FAILED_AS_EXPECTED


@dataclass(frozen=True)
class RunVerdict:
    """The judgement of one run, with what was wrong with it."""

    run_id: str
    outcome: Outcome
    problems: tuple[str, ...] = field(default_factory=tuple)


def judge_run(
    store: ConversationStore, run_id: str, expected: ExpectedRun, *, execution_status: str | None = None
) -> RunVerdict:
    """Compare a run as stored (and how its execution ended, when known) with what its scenario must produce."""
    meta = store.get_run(run_id)
    if meta is None:
        return RunVerdict(run_id, Outcome.LOST, ("no META record",))
    if not meta.is_terminal:
        return RunVerdict(run_id, Outcome.LOST, (f"status {meta.status}, not terminal",))
    messages = store.list_messages(run_id)
    lost = _conversation_gaps(messages, expected.conversation)
    if lost:
        return RunVerdict(run_id, Outcome.LOST, tuple(lost))
    problems = _outcome_problems(meta, expected, execution_status)
    for wanted, message in zip(expected.conversation, messages, strict=True):
        problems += wanted.problems_with(message)
    problems += _usage_problems(meta, messages)
    if problems:
        return RunVerdict(run_id, Outcome.UNEXPECTED, tuple(problems))
    return RunVerdict(run_id, expected.outcome)


def _conversation_gaps(messages: list[StoredMessage], expected: tuple[ExpectedMessage, ...]) -> list[str]:
    found = [(message.iteration, message.slot, message.role) for message in messages]
    wanted = [(message.iteration, message.slot, message.role) for message in expected]
    missing = [key for key in wanted if key not in found]
    extra = [key for key in found if key not in wanted]
    return [f"missing message {key}" for key in missing] + [f"unexpected message {key}" for key in extra]


def _outcome_problems(meta: RunMeta, expected: ExpectedRun, execution_status: str | None) -> list[str]:
    problems: list[str] = []
    if meta.status != expected.status:
        problems.append(f"status {meta.status} ({meta.error}), expected {expected.status}")
    if execution_status is not None and execution_status != meta.status:
        problems.append(f"the execution ended {execution_status} but the run says {meta.status}")
    if meta.stop_reason != expected.stop_reason:
        problems.append(f"stop_reason {meta.stop_reason}, expected {expected.stop_reason}")
    if expected.answer is not None and meta.answer != expected.answer:
        problems.append(f"answer {meta.answer!r}, expected {expected.answer!r}")
    if expected.error_type is not None:
        if meta.error is None or meta.error.type != expected.error_type:
            problems.append(f"error {meta.error}, expected type {expected.error_type}")
        elif expected.error_fragment is not None and expected.error_fragment not in meta.error.message:
            problems.append(f"error message {meta.error.message!r} lacks {expected.error_fragment!r}")
    return problems


def _usage_problems(meta: RunMeta, messages: list[StoredMessage]) -> list[str]:
    """Counters summed from the trace: a step counted twice shows here even when no message is doubled."""
    # the summarizer's calls (a compaction's) are model calls that store no message
    replies = sum(1 for message in messages if message.role == "assistant") + meta.usage.compaction_calls
    observations = sum(1 for message in messages if message.role == "tool")
    if (meta.usage.llm_calls, meta.usage.tool_calls) != (replies, observations):
        return [
            f"usage counts {meta.usage.llm_calls} model and {meta.usage.tool_calls} tool calls "
            f"for {replies} replies and {observations} observations"
        ]
    return []
