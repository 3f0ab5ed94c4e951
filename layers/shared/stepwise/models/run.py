"""A run as the store holds it: its META record, its trace steps, and its usage counters."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepwise.models.approval import ApprovalNote
from stepwise.models.budget import BudgetWait
from stepwise.models.counts import Cost, Count, OptionalCount, parts_within_totals
from stepwise.models.delegation import ChildAllotment
from stepwise.models.guardrail import GuardrailNote
from stepwise.models.messages import ChatMessage, SamplingOptions, ToolSpec
from stepwise.models.online_eval import OnlineEvalResult
from stepwise.models.pause import PauseState
from stepwise.models.policy import PolicyVerdict
from stepwise.models.trace_context import TraceContext

# WAITING_APPROVAL: a tool call is paused until someone approves or denies it; the run is still open.
# WAITING_BUDGET: the run reached its token or cost budget under `on_budget: ask`, and waits for a person to
# raise the budget or end it; the run is still open.
# PAUSED: a person paused the run (`POST /v1/runs/{id}/pause`); it waits at an iteration boundary, without
# compute, until resumed, cancelled or its deadline; the run is still open.
RunStatus = Literal[
    "QUEUED",
    "RUNNING",
    "WAITING_APPROVAL",
    "WAITING_BUDGET",
    "PAUSED",
    "SUCCEEDED",
    "FAILED",
    "TIMED_OUT",
    "CANCELLED",
]
TERMINAL_STATUSES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"})
OPEN_STATUSES: tuple[str, ...] = ("QUEUED", "RUNNING", "WAITING_APPROVAL", "WAITING_BUDGET", "PAUSED")
# What a run does when it reaches its token or cost budget: `end` gives the model a final round (the
# default), `ask` waits in WAITING_BUDGET until a person raises the budget or ends the run.
OnBudget = Literal["end", "ask"]

# `tool_calls`: the model called a tool the client sent; the run ends handing the calls to the client.
StopReason = Literal[
    "final_answer",
    "tool_calls",
    "max_iterations",
    "deadline",
    "token_budget",
    "cost_budget",
    "parse_errors",
    "model_error",
    "context_window",
    "error",
    "cancelled",
    "guardrail",
]
FinalRoundReason = Literal["max_iterations", "deadline", "token_budget", "cost_budget"]
# What an ended run produced (decided by `stepwise.steps.outcome`): the model's final answer; a best answer
# built from the work done before a limit or a model error stopped it; or nothing, and the run FAILED.
Outcome = Literal["answered", "partial", "none"]


class RunUsage(BaseModel, defer_build=True):
    """What a run consumed, added to by each step in the same write as the step's result."""

    # Counts are read as they can be, never refused (`stepwise.models.counts`): a usage stored by an earlier
    # version, or summed from steps that hold a bad count, must not fail the run's end or its reading.
    input_tokens: Count = 0
    output_tokens: Count = 0
    # Of the input tokens, those read from and written to the provider's prompt cache (billed apart).
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    reasoning_tokens: Count = Field(default=0, description="The part of the output tokens the model spent thinking.")
    llm_calls: Count = 0
    tool_calls: Count = 0
    llm_ms: Count = 0
    tool_ms: Count = 0
    compactions: Count = Field(default=0, description="Times the conversation was summarized to fit the model.")
    compaction_calls: Count = Field(default=0, description="Model calls those summaries took (in `llm_calls`).")
    cost_usd: Cost = Field(default=None, description="Model tokens at the model's configured prices.")
    estimated_calls: Count = Field(
        default=0, description="Model calls whose tokens are Stepwise's estimate: their provider sent no usable usage."
    )

    @model_validator(mode="after")
    def _parts_within_totals(self) -> "RunUsage":
        parts = (self.cache_read_tokens, self.cache_write_tokens, self.reasoning_tokens)
        self.cache_read_tokens, self.cache_write_tokens, self.reasoning_tokens = parts_within_totals(
            self.input_tokens, self.output_tokens, *parts
        )
        return self

    def plus(self, other: "RunUsage") -> "RunUsage":
        """This usage and `other`'s together (a child run's, added to its parent's); the cost is the sum of
        the costs known, None when neither is."""
        counts = {
            name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields if name != "cost_usd"
        }
        costs = [cost for cost in (self.cost_usd, other.cost_usd) if cost is not None]
        return type(self)(**counts, cost_usd=round(sum(costs), 6) if costs else None)

    @classmethod
    def from_steps(cls, steps: list["StepRecord"]) -> "RunUsage":
        """What a run consumed, summed from its trace: model calls (loop, summaries and formatting) and tool
        calls. A compaction's tokens and time are its summarizer calls'."""
        model_steps = [
            step for step in steps if step.kind in ("llm", "format", "compaction") and step.latency_ms is not None
        ]
        tool_steps = [step for step in steps if step.kind == "tool"]
        compactions = [step.compaction for step in steps if step.kind == "compaction" and step.compaction]
        return cls(
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


class RunError(BaseModel, defer_build=True):
    """Why a run failed: the error name the state machine saw and a message fit for the caller."""

    type: str
    message: str
    provider_status: int | None = Field(
        default=None, description="The HTTP status the model provider answered with, when its error ended the run."
    )
    retry_after_seconds: float | None = Field(
        default=None, description="How long the provider asked to wait before trying again (its `Retry-After`)."
    )


class IntentOutcome(BaseModel, defer_build=True):
    """How a run's intent was classified: by what, which model, how long it took, and why it fell back."""

    source: Literal["llm", "keywords", "default", "disabled"]
    model: str | None = None
    latency_ms: float = 0
    error: str | None = None


EXPRESS_EXECUTION_SECONDS = 300
"""Express workflows stop every execution at 5 minutes; their definition's TimeoutSeconds says so."""
EXPRESS_RUN_SECONDS = 180
"""The longest deadline of a run under Express: 120 s of the 300 stay for the final round and Format."""


class RunLimits(BaseModel, defer_build=True):
    """The limits a run was started with, copied into META so a config change cannot alter a live run."""

    max_iterations: int = Field(default=8, ge=1, le=200)
    # the state machine's TimeoutSeconds is 3600: a deadline past 3000 s would leave no room for the
    # final round (up to 300 s) and Format (up to 300 s) before an uncatchable execution timeout
    max_execution_seconds: int = Field(default=600, ge=1, le=3000)
    max_parse_errors: int = Field(default=3, ge=1, le=20)
    # copied into the state payload, where the ToolInvoke Map reads it as its MaxConcurrencyPath
    max_parallel_calls: int = Field(default=4, ge=1, le=16)
    max_total_tokens: int | None = Field(default=None, ge=1, description="Input and output tokens of the run.")
    max_cost_usd: float | None = Field(default=None, gt=0, description="At the prices of the profile's model.")
    on_budget: OnBudget = Field(
        default="end",
        description="At a budget: `end` (a final round, then the answer) or `ask` (wait in WAITING_BUDGET for "
        "POST /v1/runs/{run_id}/budget).",
    )
    # a wait never outlives the run: it is cut to what is left before the deadline when it begins
    budget_wait_seconds: int = Field(
        default=900, ge=1, le=3000, description="With `on_budget: ask`: how long the run waits for an answer."
    )

    def within(self, budget: "RunBudget | None") -> "RunLimits":
        """These limits with a request's budget applied: the tighter of each cap wins."""
        if budget is None:
            return self
        updates: dict[str, Any] = {}
        for name in ("max_total_tokens", "max_cost_usd"):
            mine, asked = getattr(self, name), getattr(budget, name)
            if asked is not None:
                updates[name] = asked if mine is None else min(mine, asked)
        return self.model_copy(update=updates)

    def for_workflow(self, workflow_type: Literal["STANDARD", "EXPRESS"]) -> "RunLimits":
        """These limits under `workflow_type`: Express caps the deadline at `EXPRESS_RUN_SECONDS`, so a run
        ends with its answer before Express stops the execution."""
        if workflow_type != "EXPRESS" or self.max_execution_seconds <= EXPRESS_RUN_SECONDS:
            return self
        return self.model_copy(update={"max_execution_seconds": EXPRESS_RUN_SECONDS})


class RunBudget(BaseModel, defer_build=True):
    """Caps a request may set on its run, over its profile's: tokens, and cost at the model's prices."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_total_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    max_cost_usd: float | None = Field(default=None, gt=0, le=10_000)


class RunOptions(BaseModel, defer_build=True):
    """What the request set for this run over its profile: sampling, a structured answer, client tools."""

    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] = Field(default_factory=list)
    sampling: SamplingOptions = Field(default_factory=SamplingOptions)
    response_schema: dict[str, Any] | None = None
    client_tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    # The client offered its tools as the legacy `functions`: a call of one is answered as `function_call`.
    legacy_functions: bool = False


class ReplayLink(BaseModel, defer_build=True):
    """What a replayed run was replayed from: its META field `replay` (see docs/evals.md, "Replaying a run").

    A replay's ToolInvoke answers each call from the original run's recorded observations; the first
    `from_iteration` iterations were copied from the original as they were stored.
    """

    original_run_id: str
    from_iteration: int = Field(default=0, ge=0)
    live_tools: bool = Field(
        default=False, description="A call the original did not make may run for real, if its tool is read-only."
    )


class RunMeta(BaseModel, defer_build=True):
    """The META item of a run."""

    run_id: str
    status: RunStatus = "QUEUED"
    owner: str
    profile: str
    session_id: str | None = None
    intent: dict[str, str] = Field(default_factory=dict)
    intent_outcome: IntentOutcome | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    limits: RunLimits = Field(default_factory=RunLimits)
    options: RunOptions | None = None
    iteration: int = 0
    deadline: float
    final_round_reason: FinalRoundReason | None = None
    stop_reason: StopReason | None = None
    # None until the run ends, and on runs stored before outcomes were (`stepwise.steps.outcome.outcome_of`)
    outcome: Outcome | None = None
    answer: str | None = None
    output: dict[str, Any] | list[Any] | None = None
    output_error: str | None = None
    error: RunError | None = None
    usage: RunUsage = Field(default_factory=RunUsage)
    cancelled_by: str | None = None
    cancelled_at: str | None = None
    replay: ReplayLink | None = None
    created_at: str
    updated_at: str
    expires_at: int
    # the span the run's steps descend from, when tracing was on as it was created
    trace: TraceContext | None = None
    # the latest wait at the run's budget (`on_budget: ask`), with its answer once given
    budget_wait: BudgetWait | None = None
    # A child run (an agent another run delegated to, `stepwise.steps.child_runs`): its parent, the parent's
    # call that started it, and its depth in the tree (None: a run the API started, at depth 1).
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    agent_depth: int | None = Field(default=None, ge=2)
    # the parent's wait for this run's end: the task token the end answers (never shown)
    parent_task_token: str | None = None
    # What a listing shows and searches without reading the run's messages or trace: the question's first
    # `LISTED_QUESTION_CHARS` characters (written with META), the tools it called (written at its end).
    question: str | None = None
    tools: list[str] = Field(default_factory=list)
    # the profile's online eval of the run, written once after it ended (`stepwise.steps.online_eval`)
    online_eval: OnlineEvalResult | None = None
    # a pause asked through the API: Parse carries it into the payload, IterationGuard waits (status PAUSED)
    pause: PauseState | None = None

    @property
    def is_terminal(self) -> bool:
        """True once the run has ended, whatever the outcome."""
        return self.status in TERMINAL_STATUSES

    @property
    def depth(self) -> int:
        """The run's depth in its tree of delegations: 1 for a run the API started, 2 for its child..."""
        return self.agent_depth or 1


LISTED_QUESTION_CHARS = 200


class RunSummary(BaseModel, defer_build=True):
    """A run as a listing shows it: what the owner index holds of its META, then what the listing reads of
    META itself (`stepwise.store.run_listing`)."""

    run_id: str
    status: RunStatus
    profile: str
    session_id: str | None = None
    iteration: int = 0
    deadline: float
    stop_reason: StopReason | None = None
    # read from META beside the metadata: the owner index does not project it
    outcome: Outcome | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: str
    updated_at: str
    question: str | None = None
    usage: RunUsage | None = None
    tools: list[str] = Field(default_factory=list)


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


class StoredMessage(ChatMessage, defer_build=True):
    """A message with the (iteration, slot) its key was derived from."""

    iteration: int
    slot: int
