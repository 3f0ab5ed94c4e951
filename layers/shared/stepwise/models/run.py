"""A run as the store holds it: its META record and its usage counters (its trace: `stepwise.models.step_record`)."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepwise.models.budget import BudgetWait
from stepwise.models.counts import Cost, Count, parts_within_totals
from stepwise.models.messages import ChatMessage, SamplingOptions, ToolSpec
from stepwise.models.online_eval import OnlineEvalResult
from stepwise.models.pause import PauseState
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


class StoredMessage(ChatMessage, defer_build=True):
    """A message with the (iteration, slot) its key was derived from."""

    iteration: int
    slot: int
