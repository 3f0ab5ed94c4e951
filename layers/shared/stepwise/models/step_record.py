"""A run's trace: one `StepRecord` per thing the run did (a model call, a decision, a tool call, a compaction...),
in the order `STEP_KIND_ORDER` gives the kinds of one iteration."""

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from stepwise.models.approval import ApprovalNote
from stepwise.models.counts import OptionalCount, parts_within_totals
from stepwise.models.delegation import ChildAllotment
from stepwise.models.guardrail import GuardrailNote
from stepwise.models.policy import PolicyVerdict
from stepwise.models.run import RunUsage


def tools_called(steps: "list[StepRecord]") -> list[str]:
    """The names of the tools a run's steps called, each once, sorted: what META keeps for the listing."""
    return sorted({step.action for step in steps if step.kind == "tool" and step.action})


# `reasoning`: what the model thought before its reply, read from its message (never stored as a step).
StepKind = Literal["llm", "reasoning", "parse", "policy", "tool", "format", "compaction", "guardrail", "message"]
# The order of the steps of one iteration; a compaction comes before its iteration's model call.
# A `policy` step shares its decision's place (after it, by `n`), so the cursors handed out keep their meaning.
STEP_KIND_ORDER: dict[str, int] = {
    "compaction": -1,
    "llm": 0,
    "reasoning": 1,
    "parse": 2,
    "policy": 2,
    "tool": 3,
    "format": 4,
    # after what it checked: the input (iteration 0), the iteration's tool results (by `n`) or the answer
    "guardrail": 5,
    # a message a person told the run (`POST /v1/runs/{id}/messages`): after its iteration, seen by the next call
    "message": 6,
}


class CompactionNote(BaseModel, defer_build=True):
    """What one compaction did: the iterations its summary covers, the request's size before and after (as
    estimated), who wrote the summary and why it ran."""

    first_iteration: int = Field(description="The first iteration this compaction summarized.")
    through_iteration: int = Field(description="The summary covers iterations 1 to this one.")
    tokens_before: int = Field(description="The next model request, estimated, with the previous summary.")
    tokens_after: int = Field(description="The same request, estimated, with this summary.")
    model: str | None = Field(default=None, description="The summarizer's model; none when it was not asked.")
    source: Literal["model", "digest"] = Field(
        description="`model`: the summarizer's notes; `digest`: its reply was unusable, so a digest of the calls "
        "and observations stands in."
    )
    reason: Literal["window", "overflow"] = Field(
        description="`window`: the request would pass the profile's threshold; `overflow`: the request was too "
        "long for the model (the provider said so, or it could not fit)."
    )
    model_calls: int = Field(default=0, description="Summarizer calls made (one per chunk of the history).")
    chunks: int = 0


class StepRecord(BaseModel, defer_build=True):
    """One entry of a run's trace; `n` tells apart the tool calls of one iteration."""

    iteration: int
    kind: StepKind
    n: int | None = None
    thought: str | None = None
    action: str | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    calls: list[dict[str, Any]] | None = None
    observation: str | None = None
    decision: str | None = None
    answer: str | None = None
    note: str | None = None
    ok: bool | None = None
    final_round: bool | None = None
    latency_ms: float | None = None
    # Counts are read as they can be, never refused (`stepwise.models.counts`), cached and reasoning tokens
    # within the totals they are part of: a stored step must never fail a step that reads it.
    input_tokens: OptionalCount = None
    output_tokens: OptionalCount = None
    cache_read_tokens: OptionalCount = None
    cache_write_tokens: OptionalCount = None
    # Why the model stopped writing, as its provider said (`length`, `max_tokens`, `malformed_tool_use`...).
    finish_reason: str | None = None
    reasoning_tokens: OptionalCount = None
    # a model call whose provider gave no usable usage: the tokens are Stepwise's estimate (the note says why)
    usage_estimated: bool | None = None
    error: str | None = None
    parse_errors: int | None = None
    # A tool call that may change something: the key it was sent with, and which attempt this was.
    idempotency_key: str | None = None
    attempt: int | None = None
    # a model call: its request as estimated here (what the provider's count is compared with)
    estimated_tokens: OptionalCount = None
    compaction: CompactionNote | None = None
    # a call that waited for approval: how, by whom, when and why it was answered
    approval: ApprovalNote | None = None
    # a decision of calls under a tool policy: its verdict on each call, in call order (`steps/call_gate.py`);
    # None for a call that is not the policy's to decide
    verdicts: list[PolicyVerdict | None] | None = None
    # a `policy` step: the verdict on call `n`, when it was not a plain permit
    policy: PolicyVerdict | None = None
    guardrail: GuardrailNote | None = None
    # a decision with calls of agents: each call's share of the run's time and budget (None for other calls)
    delegations: list[ChildAllotment | None] | None = None
    # a call of an agent: the child run it started, and what that run spent (part of this run's usage)
    child_run_id: str | None = None
    child_usage: RunUsage | None = None
    # when the step began (epoch seconds): a waterfall places each step against its run's start
    started_at: float | None = None
    # a tool step: the whole observation the model received is its message item; `observation` is a preview
    # of it (ending in "…" when cut), these its size
    observation_chars: int | None = None
    observation_bytes: int | None = None
    # a tool step whose result `max_observation_chars` cut: how long the tool's answer was
    output_chars: int | None = None
    # ...and the whole result kept apart (`stepwise.store.tool_outputs`): its length, the number of items it
    # takes, and True when `max_stored_output_chars` cut it too
    stored_output_chars: int | None = None
    stored_output_parts: int | None = None
    stored_output_cut: bool | None = None

    @model_validator(mode="after")
    def _parts_within_totals(self) -> "StepRecord":
        if self.input_tokens is None or self.output_tokens is None:
            return self
        cache_read, cache_write, reasoning = parts_within_totals(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens or 0,
            self.cache_write_tokens or 0,
            self.reasoning_tokens or 0,
        )
        self.cache_read_tokens = cache_read if self.cache_read_tokens is not None else None
        self.cache_write_tokens = cache_write if self.cache_write_tokens is not None else None
        self.reasoning_tokens = reasoning if self.reasoning_tokens is not None else None
        return self


def usage_of_steps(steps: list[StepRecord]) -> RunUsage:
    """What a run consumed, summed from its trace: model calls (loop, summaries and formatting) and tool
    calls. A compaction's tokens and time are its summarizer calls'."""
    model_steps = [
        step for step in steps if step.kind in ("llm", "format", "compaction") and step.latency_ms is not None
    ]
    tool_steps = [step for step in steps if step.kind == "tool"]
    compactions = [step.compaction for step in steps if step.kind == "compaction" and step.compaction]
    return RunUsage(
        input_tokens=sum(step.input_tokens or 0 for step in model_steps),
        output_tokens=sum(step.output_tokens or 0 for step in model_steps),
        cache_read_tokens=sum(step.cache_read_tokens or 0 for step in model_steps),
        cache_write_tokens=sum(step.cache_write_tokens or 0 for step in model_steps),
        reasoning_tokens=sum(step.reasoning_tokens or 0 for step in model_steps),
        llm_calls=sum(1 for step in model_steps if step.kind != "compaction")
        + sum(note.model_calls for note in compactions),
        tool_calls=len(tool_steps),
        llm_ms=round(sum(step.latency_ms or 0 for step in model_steps)),
        tool_ms=round(sum(step.latency_ms or 0 for step in tool_steps)),
        compactions=len(compactions),
        compaction_calls=sum(note.model_calls for note in compactions),
        estimated_calls=sum(1 for step in model_steps if step.usage_estimated),
    )
