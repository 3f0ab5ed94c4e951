"""Writing a conversation summary: the calls listed from the store, the notes asked of a model.

What a summary keeps does not depend on the summarizer. The tool calls with their arguments and outcome
come from the stored messages and trace (`call_digests`). The facts found and what is still open are the
summarizer's notes, asked in the profile's language and checked: they must have their two sections, not be
empty and fit the summary's budget. When they do not (garbage, nothing, too long, a refused call), a
digest of the calls and observations stands in, so a compaction never fails a run. Each fact starts with
the source it came from (`[<iteration> <tool>]`), so the summary can quote it as that tool's output
(`stepwise.steps.summary_text`), never restate it as Stepwise's own.

The summarizer's own input is bounded: the messages are sent in chunks that fit its window with room for
its notes, each chunk with the notes so far, and a message too large for a chunk is cut with a marker.
Tool results are quoted in it as data, and it is redacted of every secret the process knows.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from stepwise.config.context import ContextLimits
from stepwise.config.language import Language
from stepwise.config.redaction import redact_known_secrets
from stepwise.errors import LLMPermanentError
from stepwise.models.messages import ChatMessage, ChatRequest, Completion
from stepwise.models.run import StoredMessage
from stepwise.models.summary import CallDigest, ConversationSummary, EarlierCalls
from stepwise.steps.context_wording import ContextWording, context_wording
from stepwise.steps.summary_text import quoted
from stepwise.steps.token_estimate import BYTES_PER_TOKEN, text_tokens

# Calls a summary item lists one by one; older ones are counted per tool, so the item stays bounded.
MAX_LISTED_CALLS = 60
_ARGUMENT_CHARS = 160
# The notes' share of the summary's budget (the rest is the list of calls).
NOTES_SHARE = 0.6
# Of the summarizer's window, what one call's input may take; the rest is its reply and the margin.
_INPUT_SHARE = 0.6
_MIN_CHUNK_TOKENS = 256
MAX_CHUNKS = 8
_EXCERPT_MIN_CHARS = 60
# The notes' headings, English or Chinese whatever the profile's language, as models write them: in bold, as
# a markdown heading or a list item, with a full-width colon.
_COLON = "[:\uff1a]"
# What may stand before a heading on its line: no newline, or a search would read every blank line after
# each line start again (a reply of newlines cost the square of its length).
_LEAD = r"(?:[^\S\n]|[#*_>-])*+"
_FACTS = re.compile(rf"^{_LEAD}(facts?(\s+found)?|事实|已查明的事实)[\s*_]*{_COLON}[*_]*", re.IGNORECASE | re.MULTILINE)
_OPEN = re.compile(
    rf"^{_LEAD}(open|still\s+open|open\s+questions?|待办|尚待完成|未完成)[\s*_]*{_COLON}[*_]*",
    re.IGNORECASE | re.MULTILINE,
)


def call_digests(
    messages: Sequence[StoredMessage], outcomes: Mapping[tuple[int, str], bool | None]
) -> list[CallDigest]:
    """The tool calls the model made in `messages`, in order, with how each went.

    `outcomes` maps (iteration, call id) to the stored tool step's `ok`; a call with no result was not run.
    """
    digests: list[CallDigest] = []
    for message in messages:
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
            if len(arguments) > _ARGUMENT_CHARS:
                arguments = arguments[: _ARGUMENT_CHARS - 1] + "…"
            key = (message.iteration, call.id)
            outcome = "not_run" if key not in outcomes else ("ok" if outcomes[key] is not False else "failed")
            digests.append(
                CallDigest(iteration=message.iteration, name=call.name, arguments=arguments, outcome=outcome)
            )
    return digests


def merged_calls(
    previous: ConversationSummary | None, new: list[CallDigest]
) -> tuple[list[CallDigest], dict[str, EarlierCalls]]:
    """The calls of the previous summary and the new ones: the latest listed, older ones counted per tool."""
    calls = [*(previous.calls if previous else []), *new]
    earlier = {name: counts.model_copy() for name, counts in (previous.earlier_calls if previous else {}).items()}
    for call in calls[: max(0, len(calls) - MAX_LISTED_CALLS)]:
        counts = earlier.setdefault(call.name, EarlierCalls())
        counts.calls += 1
        counts.ok += call.outcome == "ok"
    return calls[-MAX_LISTED_CALLS:], earlier


@dataclass
class Notes:
    """A summary's notes: the facts found and what is still open, and what writing them took."""

    facts: str
    open: str
    source: str = "model"
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0
    model_calls: int = 0
    chunks: int = 0
    # a summarizer call's usage is the estimate (its provider sent none usable)
    usage_estimated: bool = False
    problems: list[str] = field(default_factory=list)


def notes_budget(limits: ContextLimits) -> int:
    """The tokens a summary's notes may take."""
    return int(limits.summary_tokens * NOTES_SHARE)


def read_notes(text: str, budget_tokens: int) -> tuple[str, str] | str:
    """The (facts, open) sections of a summarizer's reply, or why it cannot be used."""
    if not text.strip():
        return "the reply was empty"
    facts_heading = _FACTS.search(text)
    if facts_heading is None:
        return "the reply has no facts section"
    open_heading = _OPEN.search(text, facts_heading.end())
    facts_end = open_heading.start() if open_heading else len(text)
    facts = text[facts_heading.end() : facts_end].strip()
    still_open = text[open_heading.end() :].strip() if open_heading else ""
    if not facts:
        return "the facts section is empty"
    if text_tokens(facts + still_open) > budget_tokens:
        return f"the notes are longer than their budget of {budget_tokens} tokens"
    return facts, still_open


def _transcript_line(message: StoredMessage) -> str:
    if message.role == "assistant":
        calls = "".join(
            f"\n  calls {call.name} {json.dumps(call.arguments, ensure_ascii=False)}" for call in message.tool_calls
        )
        return f"[{message.iteration}] assistant: {message.content.strip()}{calls}"
    if message.role == "tool":
        # quoted, so the summarizer reads it as data (its prompt says so), however it is worded
        result = "\n".join(quoted(message.content.splitlines() or [""]))
        return f"[{message.iteration}] result of {message.name or 'tool'}, quoted:\n{result}"
    return f"[{message.iteration}] {message.role}: {message.content}"


def _cut(text: str, tokens: int, wording: ContextWording) -> str:
    keep = max(_EXCERPT_MIN_CHARS, tokens * BYTES_PER_TOKEN - 200)
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= keep:
        return text
    kept = encoded[:keep].decode("utf-8", errors="ignore")
    return kept + wording.cut_marker.format(count=len(text) - len(kept))


def chunks_of(messages: Sequence[StoredMessage], chunk_tokens: int, wording: ContextWording) -> list[list[str]]:
    """The transcript lines of `messages` in chunks of at most `chunk_tokens`, whole iterations together
    where they fit; a line larger than a chunk is cut to fit with a marker."""
    chunks: list[list[str]] = [[]]
    used = 0
    for message in messages:
        line = _cut(_transcript_line(message), chunk_tokens, wording)
        cost = text_tokens(line) + 1
        if used + cost > chunk_tokens and chunks[-1]:
            chunks.append([])
            used = 0
        chunks[-1].append(line)
        used += cost
    return [chunk for chunk in chunks if chunk]


@dataclass(frozen=True)
class SummaryInput:
    """What a summary is written from: the question, the notes so far, and the messages to condense."""

    question: str
    previous: ConversationSummary | None
    messages: list[StoredMessage]
    first: int
    through: int


def write_notes(
    source: SummaryInput,
    *,
    complete: Callable[[ChatRequest], Completion],
    model_name: str,
    limits: ContextLimits,
    language: Language,
    outcomes: Mapping[tuple[int, str], bool | None],
) -> Notes:
    """The summary's notes, from the summarizer in chunks; the digest when any reply is unusable or the
    summarizer refuses (`LLMPermanentError`, a context overflow included). Transient errors propagate, so the
    state machine retries Compact. `complete` calls the summarizer once (in its span).

    The notes come back redacted of every secret the process knows, as the store would redact them: the
    summary this process keeps, renders into every later request and sends its next summarizer is then the
    one stored."""
    notes = _summarized(source, complete, model_name, limits, language, outcomes)
    notes.facts, notes.open = redact_known_secrets(notes.facts), redact_known_secrets(notes.open)
    return notes


def _summarized(
    source: SummaryInput,
    complete: Callable[[ChatRequest], Completion],
    model_name: str,
    limits: ContextLimits,
    language: Language,
    outcomes: Mapping[tuple[int, str], bool | None],
) -> Notes:
    wording = context_wording(language)
    budget = notes_budget(limits)
    facts = source.previous.facts if source.previous else ""
    still_open = source.previous.open if source.previous else ""
    system = wording.summarizer_system.format(words=_words(budget, language))
    window = limits.summary_window or limits.window or 0
    fixed = text_tokens(system + source.question + facts + still_open) + budget * 2 + 64
    chunk_tokens = int(window * _INPUT_SHARE) - fixed
    notes = Notes(facts=facts, open=still_open, model=model_name)
    if chunk_tokens < _MIN_CHUNK_TOKENS:
        return digest_notes(source, outcomes, budget, language, notes, "the summarizer's window leaves no room")
    chunks = chunks_of(source.messages, chunk_tokens, wording)
    if len(chunks) > MAX_CHUNKS:
        return digest_notes(source, outcomes, budget, language, notes, f"{len(chunks)} chunks to summarize")
    for chunk in chunks:
        # Redacted like everything that leaves Stepwise: the notes so far and the messages may come from this
        # process's caches, which hold what was written before the store redacted it.
        prompt = redact_known_secrets(_summarizer_prompt(source, notes, chunk, wording))
        request = ChatRequest(
            messages=[ChatMessage(role="system", content=system), ChatMessage(role="user", content=prompt)],
            max_tokens=budget,
        )
        started = time.perf_counter()
        try:
            completion = complete(request)
        except LLMPermanentError as exc:
            return digest_notes(source, outcomes, budget, language, notes, f"the summarizer refused: {exc}")
        notes.latency_ms += (time.perf_counter() - started) * 1000
        notes.model_calls += 1
        notes.chunks += 1
        notes.input_tokens += completion.usage.input_tokens
        notes.output_tokens += completion.usage.output_tokens
        notes.usage_estimated |= completion.usage.unreliable is not None
        notes.model = completion.model or model_name
        read = read_notes(completion.content, budget)
        if isinstance(read, str):
            return digest_notes(source, outcomes, budget, language, notes, read)
        notes.facts, notes.open = read
    return notes


def _words(budget_tokens: int, language: Language) -> int:
    # estimated tokens are UTF-8 bytes / 3: about 6 bytes per English word, 3 per Chinese character
    return max(20, budget_tokens * BYTES_PER_TOKEN // (3 if language == "zh" else 6) * 4 // 5)


def _summarizer_prompt(source: SummaryInput, notes: Notes, chunk: list[str], wording: ContextWording) -> str:
    parts = [wording.summarizer_question, source.question.strip()]
    if notes.facts or notes.open:
        parts += ["", wording.summarizer_notes, f"Facts:\n{notes.facts}\nOpen:\n{notes.open}".strip()]
    parts += ["", wording.summarizer_messages.format(first=source.first, through=source.through), *chunk]
    return "\n".join(parts)


def digest_notes(
    source: SummaryInput,
    outcomes: Mapping[tuple[int, str], bool | None],
    budget_tokens: int,
    language: Language,
    spent: Notes,
    problem: str,
) -> Notes:
    """The notes when the summarizer's are unusable: the earlier notes (cut to half the budget), then each
    new call with the start of what it returned, all excerpts cut evenly to fit the budget."""
    wording = context_wording(language)
    earlier = source.previous.facts.strip() if source.previous else ""
    if text_tokens(earlier) > budget_tokens // 2:
        earlier = _cut(earlier, budget_tokens // 2, wording)
    results = {
        (message.iteration, message.tool_call_id): message.content
        for message in source.messages
        if message.role == "tool"
    }
    calls = call_digests(source.messages, outcomes)
    room_chars = (budget_tokens - text_tokens(earlier)) * BYTES_PER_TOKEN - 64 * len(calls)
    excerpt_chars = max(_EXCERPT_MIN_CHARS, room_chars // max(1, len(calls)))
    call_ids = [
        (message.iteration, call.id)
        for message in source.messages
        if message.role == "assistant"
        for call in message.tool_calls
    ]
    lines: list[str] = [earlier] if earlier else []
    for call, key in zip(calls, call_ids, strict=True):
        excerpt = " ".join(results.get(key, "").split())
        if len(excerpt) > excerpt_chars:
            excerpt = excerpt[: excerpt_chars - 1] + "…"
        line = wording.digest_observation.format(iteration=call.iteration, name=call.name, excerpt=excerpt)
        if text_tokens("\n".join([*lines, line])) > budget_tokens:
            break
        lines.append(line)
    spent.facts = "\n".join(lines)
    spent.open = source.previous.open if source.previous else ""
    spent.source = "digest"
    spent.problems.append(problem)
    return spent
