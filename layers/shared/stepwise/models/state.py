"""The payload passed between states of the state machine.

It carries ids and counters only, so its size does not grow with the conversation: message bodies,
arguments and observations live in the store. Every state handler validates its event against these
models; a malformed event is an `InvalidStateEvent` naming the field.
"""

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from stepwise.errors import InvalidStateEvent
from stepwise.inputs.validation_problems import describe_problems
from stepwise.models.counts import Cost, Count, OptionalCount
from stepwise.models.run import FinalRoundReason, RunMeta
from stepwise.models.trace_context import TraceContext

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"

ModelT = TypeVar("ModelT", bound=BaseModel)

# Every model here is built on first use (`defer_build`): each handler validates a few of them (ToolInvoke
# none of the loop's payload, IterationGuard none of ToolInvoke's), and building the rest was cold-start time.

# `await_budget`: IterationGuard found the run at its budget under `on_budget: ask`; the run waits for a person.
NextStep = Literal[
    "start",
    "continue",
    "final_round",
    "tool_calls",
    "final_answer",
    "parse_error",
    "limit_hit",
    "await_budget",
    "await_resume",
]


class CallRef(BaseModel, defer_build=True):
    """A pointer to one tool call of an iteration; its arguments are in the store."""

    model_config = ConfigDict(extra="forbid", strict=True)

    call_id: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=128)
    # Set when the tool requires approval: how long the call waits for it (the wait's TimeoutSecondsPath).
    approval_timeout_seconds: int | None = Field(default=None, ge=1, le=3600)
    # Set when the call delegates to an agent: how long the parent waits for the child run (AwaitChildRun's
    # TimeoutSecondsPath), the child's deadline and a margin.
    child_timeout_seconds: int | None = Field(default=None, ge=1, le=3600)


class RunSpend(BaseModel, defer_build=True):
    """What the run's model calls have spent so far: LLMCall adds each call's tokens and prices the total.

    Carried in the payload so that IterationGuard checks a budget without reading the trace.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    # Counts are read as they can be, never refused (`stepwise.models.counts`): a spend an earlier step
    # passed on must not fail the next one.
    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    # The part of the output spent thinking, which a model may bill at its own rate.
    reasoning_tokens: Count = 0
    cost_usd: Cost = None
    # What the run's child runs spent (their own tokens and their cost at their models' prices): counted
    # against the run's budget beside its own calls, which alone are priced at its model's prices.
    delegated_tokens: Count = 0
    delegated_cost_usd: Cost = None


class RunContext(BaseModel, defer_build=True):
    """What the loop's steps need of a run's META, which never changes while it runs, and its spend.

    The first IterationGuard copies it from META into the payload, so no later step reads META; LLMCall
    updates `spend` with the usage of the call it made. Its size is fixed (one profile name and a few
    numbers) whatever the length of the run.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    profile: str = Field(min_length=1, max_length=128)
    deadline: float
    expires_at: int
    max_iterations: int = Field(ge=1)
    max_parse_errors: int = Field(ge=1)
    max_parallel_calls: int = Field(ge=1, le=40)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    spend: RunSpend = Field(default_factory=RunSpend)
    # With `on_budget: ask`: how long a wait at the budget may last (AwaitBudget's TimeoutSecondsPath), cut
    # to what is left before the deadline each time a wait begins; None with `on_budget: end`.
    budget_wait_seconds: int | None = Field(default=None, ge=1, le=3000)
    # where each step's span joins the run's trace (W3C trace context; None when tracing was off)
    trace: TraceContext | None = None
    # the model's context window as its server stated it (a refusal, a model listing), for a model whose
    # window neither the configuration nor the catalog knows: every later step of the run uses it
    learned_window: int | None = Field(default=None, ge=1, le=100_000_000)

    @classmethod
    def from_meta(cls, meta: RunMeta) -> "RunContext":
        """The context of the run `meta` describes."""
        return cls(
            profile=meta.profile,
            deadline=float(meta.deadline),
            expires_at=meta.expires_at,
            max_iterations=meta.limits.max_iterations,
            max_parse_errors=meta.limits.max_parse_errors,
            max_parallel_calls=meta.limits.max_parallel_calls,
            max_total_tokens=meta.limits.max_total_tokens,
            max_cost_usd=meta.limits.max_cost_usd,
            budget_wait_seconds=meta.limits.budget_wait_seconds if meta.limits.on_budget == "ask" else None,
            trace=meta.trace,
        )


class SummaryRef(BaseModel, defer_build=True):
    """Which stored summary the conversation is rendered with: the one Compact wrote in `iteration` (its
    `n`-th that iteration), covering iterations 1 to `through`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    iteration: int = Field(ge=1, le=10_000)
    n: int = Field(ge=0, le=9)
    through: int = Field(ge=1, le=10_000)


class ContextState(BaseModel, defer_build=True):
    """What the loop knows of the conversation's size in the model's context window: a few numbers, so the
    payload keeps its size however long the run.

    LLMCall sets the sizes after each model call; IterationGuard adds an upper bound for what the tools
    added and sets `compact` when the next request could pass `compact_at`; Compact clears it and points
    the context at the summary it wrote.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    # the summary the conversation is rendered with (see `summary`): numbers, not an object that appears
    # once a run is summarized, so the payload only ever changes in its digits
    summary_iteration: int | None = Field(default=None, ge=1, le=10_000)
    summary_n: int | None = Field(default=None, ge=0, le=9)
    summary_through: int | None = Field(default=None, ge=1, le=10_000)
    # IterationGuard's flag: Compact runs before this iteration's model call
    compact: bool = False
    # the iteration Compact last ran in: at most once per iteration, after which a request is cut to fit
    compacted_at: int | None = Field(default=None, ge=1, le=10_000)
    # the iteration whose request was found too long (by the provider, or by LLMCall's estimate): from then
    # on in that iteration, estimates are raised
    overflow_at: int | None = Field(default=None, ge=1, le=10_000)
    # the last request: its input tokens as the provider counted them (None when it did not say) and as
    # estimated here; their ratio calibrates the estimates of what is added after it
    sent_tokens: OptionalCount = None
    sent_estimate: OptionalCount = None
    reply_tokens: OptionalCount = None
    # the last request is the start of the next one (no summary written since)
    anchored: bool = False
    # tokens past which the conversation is summarized first (none: the model's window is not known)
    compact_at: int | None = Field(default=None, ge=1)
    # the most tokens one tool result can add (the profile's max_observation_chars, estimated)
    observation_tokens: OptionalCount = None
    # Parse's flag from META: a person asked the run to pause, so IterationGuard waits (AwaitResume) for at
    # most `pause_seconds` (what is left before the deadline) before the next iteration starts
    pause: bool = False
    pause_seconds: int | None = Field(default=None, ge=1)

    @property
    def summary(self) -> SummaryRef | None:
        """The stored summary the conversation is rendered with, if any."""
        if self.summary_iteration is None or self.summary_n is None or self.summary_through is None:
            return None
        return SummaryRef(iteration=self.summary_iteration, n=self.summary_n, through=self.summary_through)

    def with_summary(self, summary: SummaryRef) -> "ContextState":
        """This context rendered with `summary` from now on."""
        return self.model_copy(
            update={"summary_iteration": summary.iteration, "summary_n": summary.n, "summary_through": summary.through}
        )


class StatePayload(BaseModel, defer_build=True):
    """What flows between IterationGuard, LLMCall, Parse, ToolInvoke and Format.

    `run` is absent only in the execution input (and in executions started before it existed): the
    first IterationGuard fills it. `parse_errors` is the run's count of consecutive parse errors so
    far, carried from one Parse to the next. `context` is the conversation's size in the model's window.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=0, le=10_000)
    final_round: bool = False
    final_round_reason: FinalRoundReason | None = None
    next: NextStep = "start"
    calls: list[CallRef] = Field(default_factory=list, max_length=64)
    parse_errors: int = Field(default=0, ge=0, le=10_000)
    run: RunContext | None = None
    context: ContextState = Field(default_factory=ContextState)

    @property
    def trace(self) -> TraceContext | None:
        """The run's trace context, once the first IterationGuard copied it into `run`."""
        return self.run.trace if self.run is not None else None


class BudgetWaitEvent(BaseModel, defer_build=True):
    """The wait at the budget (AwaitBudget, a mode of IterationGuard's function): the run, and the task token
    that answers it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=0, le=10_000)
    run: RunContext
    task_token: str = Field(min_length=1, max_length=2048)


class PauseWaitEvent(BaseModel, defer_build=True):
    """The wait of a paused run (AwaitResume, a mode of IterationGuard's function): the run, the iteration it
    waits after, and the task token that resumes it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    pause: bool
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=0, le=10_000)
    seconds: int = Field(ge=1)
    task_token: str = Field(min_length=1, max_length=2048)


class _MapItemEvent(BaseModel, defer_build=True):
    """What every task of one ToolInvoke Map item is given: the run, the iteration, and the call."""

    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    iteration: int = Field(ge=1, le=10_000)
    index: int = Field(ge=0, le=63)
    call: CallRef
    # the run's trace context (the Map's ItemSelector copies `$.run.trace`)
    trace: TraceContext | None = None


class ToolInvokeEvent(_MapItemEvent, defer_build=True):
    """One item of the ToolInvoke Map: the run, the iteration, and the call to make."""

    # What the wait for approval ended with: SendTaskSuccess's output, or the error a Catch put here
    # (`{"Error", "Cause"}`: a denial, a timeout). Absent for calls that need no approval.
    approval: Any = None
    # What the wait for a child run ended with: the child's end (`{"child_run_id", "status"}`), or the error a
    # Catch put here. Absent for calls of tools.
    child: Any = None


class ApprovalWaitEvent(_MapItemEvent, defer_build=True):
    """The wait-for-approval task of one Map item: the call, and the task token that answers it."""

    task_token: str = Field(min_length=1, max_length=2048)


class ChildWaitEvent(_MapItemEvent, defer_build=True):
    """The wait for a child run (AwaitChildRun) of one Map item: the call, the task token the child's end
    answers, and the parent's execution (whose state machine the child runs on). On an Express workflow the
    token is the execution's id: nothing can wait there."""

    task_token: str = Field(min_length=1, max_length=2048)
    execution: str = Field(min_length=1, max_length=2048)


class TaskFailure(BaseModel, defer_build=True):
    """The error a Catch put at `$.error`: the error name and the cause Step Functions recorded."""

    model_config = ConfigDict(extra="ignore")

    Error: str = "States.TaskFailed"
    Cause: str | None = None


class CompactEvent(StatePayload, defer_build=True):
    """Compact's input: the payload, and the error LLMCall raised when Compact is reached through its Catch
    (`ContextWindowExceeded`: the request was too long for the model, or would not fit)."""

    overflow: TaskFailure | None = None


def _iteration_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _trace_or_none(value: Any) -> TraceContext | None:
    """The trace context of a failed payload's `run`, when it has a readable one."""
    trace = value.get("trace") if isinstance(value, dict) else None
    try:
        return TraceContext.model_validate(trace) if trace is not None else None
    except ValidationError:
        return None


class FailureEvent(BaseModel, defer_build=True):
    """The FormatFailure input: whatever the payload was when a task failed, plus the caught error.

    Only the run id is required: the failure may have been caused by a malformed payload, and it must
    still be recorded.
    """

    model_config = ConfigDict(extra="ignore")

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    # recorded as the iteration the run ended at when it is readable; a malformed one is dropped, not refused
    iteration: Annotated[int | None, BeforeValidator(_iteration_or_none)] = None
    error: TaskFailure
    # read from the payload's `run` (a malformed one gives none): the failure's span joins the run's trace
    trace: Annotated[TraceContext | None, BeforeValidator(_trace_or_none)] = Field(default=None, alias="run")


class ToolInvokeResult(BaseModel, defer_build=True):
    """What one Map iteration returns: enough for the execution history, nothing that grows."""

    call_id: str
    ok: bool | None
    replayed: bool = False


class FormatResult(BaseModel, defer_build=True):
    """The machine's final output."""

    run_id: str
    status: Literal["SUCCEEDED", "FAILED"]
    stop_reason: str | None = None
    # the run is in its profile's online eval sample: the state machine's `OnlineEval` state evaluates it
    online_eval: bool = False


class OnlineEvalEvent(BaseModel, defer_build=True):
    """The input of the `OnlineEval` states: the ended run to evaluate."""

    online_eval_of: str = Field(pattern=RUN_ID_PATTERN)


def parse_event(model: type[ModelT], event: Any) -> ModelT:
    """Validate a state event, raising `InvalidStateEvent` that names each bad field and why."""
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidStateEvent(
            f"invalid {model.__name__} event: {describe_problems(exc, top_level='<event>')}"
        ) from None
