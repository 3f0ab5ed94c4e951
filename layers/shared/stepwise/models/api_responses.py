"""What the HTTP API answers: an accepted run, a run's view, trace, events and list, and the error body; the
OpenAPI document is generated from these models (the requests are in `stepwise.models.api_requests`).
"""

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    computed_field,
)

from stepwise.models.approval import ApprovalNote
from stepwise.models.budget import BudgetWaitView
from stepwise.models.delegation import ChildRunLink
from stepwise.models.guardrail import GuardrailNote
from stepwise.models.online_eval import OnlineEvalResult
from stepwise.models.pause import PauseView
from stepwise.models.policy import PolicyVerdict
from stepwise.models.run import IntentOutcome, Outcome, ReplayLink, RunError, RunStatus, RunUsage, StopReason
from stepwise.models.step_record import CompactionNote


class RunAccepted(BaseModel, defer_build=True):
    """The answer to `POST /v1/runs`: the run is stored and its execution started."""

    run_id: str
    status: RunStatus
    profile: str
    intent: dict[str, str]
    session_id: str | None = None
    poll_url: str = Field(description="Where to GET the run's status and answer.")


class MessageAccepted(BaseModel, defer_build=True):
    """The answer to `POST /v1/runs/{run_id}/messages`: the message is stored for the run's next model call."""

    run_id: str
    message_id: str = Field(description="The message's id; its `message` step in the trace carries it as call_id.")
    posted_at: str
    content: str = Field(description="The message as stored (after the profile's input guardrails).")
    status: RunStatus = Field(description="The run's status as the message was stored.")


class ReplayAccepted(RunAccepted):
    """The answer to `POST /v1/runs/{run_id}/replay`: the new run is stored and its execution started."""

    original_run_id: str
    from_iteration: int


class TraceStep(BaseModel, defer_build=True):
    """One step of a run's trace: a compaction, a model call, what the model thought (`reasoning`), its
    parsed decision, a tool call or the final formatting."""

    iteration: int
    kind: str
    n: int | None = None
    thought: str | None = Field(
        default=None, description="The reasoning before a decision; on a `reasoning` step, what the model thought."
    )
    tool: str | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    calls: list[dict[str, Any]] | None = Field(default=None, description="Every tool call a parse step found.")
    observation: str | None = Field(
        default=None,
        description="The start of the tool's observation: whole, or its first 500 characters followed by `…` "
        "(`observation_chars` says how long it is).",
    )
    decision: str | None = None
    answer: str | None = None
    ok: bool | None = None
    final_round: bool | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = Field(default=None, description="The part of the output spent thinking.")
    usage_estimated: bool | None = Field(
        default=None,
        description="A model call whose provider sent no usable usage: its tokens are Stepwise's estimate, and "
        "`note` says why.",
    )
    error: str | None = None
    note: str | None = None
    idempotency_key: str | None = Field(
        default=None,
        description="A tool call that may change something: the idempotency key it was sent with (the same "
        "for every attempt of the call).",
    )
    attempt: int | None = Field(
        default=None, description="Which attempt of such a call this was: 2 or more after a crash or a retry."
    )
    estimated_tokens: int | None = Field(default=None, description="A model call's request, as estimated before it.")
    compaction: CompactionNote | None = Field(
        default=None, description="A compaction step: what its summary covers, and the request before and after."
    )
    approval: ApprovalNote | None = Field(
        default=None,
        description="A tool call that waited for approval: approved, denied or timed out, by whom, when and why.",
    )
    policy: PolicyVerdict | None = Field(
        default=None,
        description="A `policy` step: the tool policy's verdict on call `n` (refused, waiting for approval, or, "
        "under `policy_mode: log_only`, what would have been).",
    )
    guardrail: GuardrailNote | None = Field(
        default=None, description="A guardrail step: the point checked and what its rules did (never the text)."
    )
    child_run_id: str | None = Field(
        default=None, description="A call of an agent: the child run it started (`GET /v1/runs/{run_id}` reads it)."
    )
    child_usage: RunUsage | None = Field(
        default=None, description="A call of an agent: what its child run spent (part of this run's usage)."
    )
    started_at: float | None = Field(
        default=None, description="When the step began (Unix time, seconds); absent on steps stored before it was kept."
    )
    observation_chars: int | None = Field(
        default=None,
        description="A tool step: the length (characters) of the whole observation the model received; "
        "`observation` is its start, ending in `…` when cut. `GET /v1/runs/{run_id}/steps/{iteration}/{call_id}` "
        "returns it whole.",
    )
    observation_bytes: int | None = Field(default=None, description="The same observation's size in UTF-8 bytes.")
    output_chars: int | None = Field(
        default=None,
        description="A tool step whose result the profile's `max_observation_chars` cut: the length of what the "
        "tool answered (the model received the first `observation_chars`, ending with a marker saying so).",
    )
    stored_output_chars: int | None = Field(
        default=None,
        description="Such a step's whole result as kept apart (`GET /v1/runs/{run_id}/steps/{iteration}/{call_id}` "
        "returns it): its length (redacted as the observation is).",
    )
    stored_output_cut: bool | None = Field(
        default=None,
        description="True when the profile's `max_stored_output_chars` cut that kept result too (it ends with "
        "`…[truncated N chars]`).",
    )


class PendingApproval(BaseModel, defer_build=True):
    """A tool call waiting for approval: what would run, and until when it waits."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    arguments_display: str = Field(
        description="The arguments as JSON text to show a person: every invisible, bidi or control character "
        "(Unicode Cc, Cf, Zl, Zp) written as its escape (`\\u202e`), so it shows what the tool would receive "
        "and still parses to `arguments`."
    )
    arguments_sha256: str = Field(
        description="SHA-256 (hex) of the arguments as canonical JSON (keys sorted, separators `,` and `:`, "
        "UTF-8): send it back with the answer to approve exactly these arguments."
    )
    iteration: int
    requested_at: str
    timeout_at: str = Field(description="Unanswered by then, the call is denied (not run).")


class WaitingApproval(PendingApproval):
    """One call in `GET /v1/approvals`: a call waiting for approval, and the run it belongs to."""

    run_id: str
    profile: str


class ApprovalList(BaseModel, defer_build=True):
    """`GET /v1/approvals`: a page of the caller's calls waiting for approval, across their runs, oldest first."""

    approvals: list[WaitingApproval]
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; absent on the last page."
    )


class RunView(BaseModel, defer_build=True):
    """`GET /v1/runs/{run_id}`: the run's status and, once it ended, its outcome."""

    run_id: str
    status: RunStatus
    profile: str
    intent: dict[str, str]
    intent_outcome: IntentOutcome | None = Field(
        default=None, description="How the intent was classified: source, model, latency, why it fell back."
    )
    session_id: str | None = None
    metadata: dict[str, str]
    created_at: str
    updated_at: str
    iterations: int
    stop_reason: StopReason | None = None
    outcome: Outcome | None = Field(
        default=None,
        description="Once the run ended: `answered` (the model's final answer), `partial` (a limit or a model error "
        "stopped it; the answer is the best built from the work done) or `none` (no answer; the run FAILED).",
    )
    answer: str | None = None
    output: dict[str, Any] | list[Any] | None = Field(default=None, description="Structured output, if asked for.")
    output_error: str | None = None
    usage: RunUsage
    error: RunError | None = None
    cancelled_by: str | None = Field(default=None, description="Who cancelled the run (its owner's identity).")
    cancelled_at: str | None = None
    replay: ReplayLink | None = Field(
        default=None, description="For a replay: the run it replays, the iterations it kept, whether tools ran live."
    )
    trace: list[TraceStep] | None = Field(default=None, description="The steps, with ?trace=true.")
    pending_approvals: list[PendingApproval] | None = Field(
        default=None, description="While WAITING_APPROVAL: the tool calls to approve or deny, with their arguments."
    )
    budget_wait: BudgetWaitView | None = Field(
        default=None,
        description="With `on_budget: ask`: the run's latest wait at its budget (while WAITING_BUDGET, the one to "
        "answer with POST /v1/runs/{run_id}/budget), and its answer once given.",
    )
    parent_run_id: str | None = Field(
        default=None, description="A child run: the run whose agent call started it (its usage includes this one's)."
    )
    parent_call_id: str | None = Field(default=None, description="A child run: the parent's tool call that started it.")
    child_runs: list[ChildRunLink] | None = Field(
        default=None,
        description="A run whose profile delegates to agents: the child runs its agent calls started, in call order.",
    )
    online_eval: OnlineEvalResult | None = Field(
        default=None,
        description="For a run in its profile's `online_evals` sample, once evaluated after it ended: the verdict "
        "(`passed`, `failed`, or `error` when the eval could not run), each check's verdict and reason, and the "
        "judge's. It never changes the run's status or outcome.",
    )
    pause: PauseView | None = Field(
        default=None,
        description="A pause asked with POST /v1/runs/{run_id}/pause: who asked it and when, and while the run "
        "waits (PAUSED) since when and until when; absent once resumed.",
    )


class RunEvents(BaseModel, defer_build=True):
    """`GET /v1/runs/{run_id}/events`: the steps stored after the cursor, in the order they happened."""

    run_id: str
    status: RunStatus
    done: bool = Field(description="The run has ended: no step will follow these.")
    outcome: Outcome | None = Field(default=None, description="Once the run ended, what it produced (see the run).")
    events: list[TraceStep]
    next_cursor: str = Field(description="Pass as `after` to get the steps stored after these.")
    # The cursor right after each event (the stream sends it as the event's `id`); not part of the JSON answer.
    _cursors: list[str] = PrivateAttr(default_factory=list)

    @property
    def cursors(self) -> list[str]:
        """The cursor right after each of `events`, in their order."""
        return self._cursors

    def with_cursors(self, cursors: list[str]) -> "RunEvents":
        """These events, knowing the cursor right after each."""
        if len(cursors) != len(self.events):
            raise ValueError(f"{len(cursors)} cursors for {len(self.events)} events")
        self._cursors = cursors
        return self


class RunListItem(BaseModel, defer_build=True):
    """One run in `GET /v1/runs`: enough to choose which one to read."""

    run_id: str
    status: RunStatus
    profile: str
    question: str | None = Field(
        default=None,
        description="The question's first 200 characters (absent on runs stored before listings kept it).",
    )
    usage: RunUsage | None = Field(
        default=None, description="Tokens and cost, once the run ended (`GET /v1/runs/{run_id}` counts an open run's)."
    )
    session_id: str | None = None
    iterations: int
    stop_reason: StopReason | None = None
    outcome: Outcome | None = Field(default=None, description="Once the run ended: `answered`, `partial` or `none`.")
    metadata: dict[str, str] = Field(
        default_factory=dict, description="The pairs stored with the run (an eval run's suite and case, say)."
    )
    created_at: str
    updated_at: str


class RunList(BaseModel, defer_build=True):
    """`GET /v1/runs`: a page of the caller's runs, newest first."""

    runs: list[RunListItem]
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; absent on the last page."
    )
    searched_until: str | None = Field(
        default=None,
        description="Set when a request's read budget ran out before any run matched: the creation time of the "
        "oldest run examined. Runs created before it were not searched; ask again with `created_before` set to it.",
    )


class ErrorBody(BaseModel, defer_build=True):
    """What went wrong: a stable `type`, a message for people, and machine-readable details.

    `code` and `param` are what OpenAI's clients read from an error (the `openai` SDK's `APIError.code`
    and `.param`): the type again, and the first field a 422 names.
    """

    type: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)

    @computed_field(description="The same as `type`, where OpenAI's clients look for it.")  # type: ignore[prop-decorator]
    @property
    def code(self) -> str:
        return self.type

    @computed_field(description="The first field a 422 names, where OpenAI's clients look for it.")  # type: ignore[prop-decorator]
    @property
    def param(self) -> str | None:
        errors = self.details.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            field = errors[0].get("field")
            return field if isinstance(field, str) else None
        return None


class ErrorResponse(BaseModel, defer_build=True):
    """Every 4xx and 5xx answer of the API."""

    error: ErrorBody


# Why a step's observation is not the whole result: the model received its start and the rest was not kept, it
# was kept up to `max_stored_output_chars`, or it was cut to fit one answer.
ObservationCut = Literal["not_kept", "stored_limit", "answer_size"]


class StepObservation(BaseModel, defer_build=True):
    """`GET /v1/runs/{run_id}/steps/{iteration}/{call_id}`: one tool call's whole observation, as the model
    received it (the trace keeps a preview)."""

    run_id: str
    iteration: int
    call_id: str
    n: int = Field(description="Which call of the iteration it was (from 0).")
    tool: str | None = None
    ok: bool | None = None
    observation: str = Field(
        description="The observation as the model received it: when the tool answered more than the profile's "
        "`max_observation_chars`, its first part ending with `…[truncated N chars]` (what the tool answered past "
        "that was never stored)."
    )
    observation_chars: int = Field(description="Its length in characters.")
    observation_bytes: int = Field(description="Its size in UTF-8 bytes.")
    output_chars: int | None = Field(
        default=None, description="When `max_observation_chars` cut it: the length of what the tool answered."
    )
    source: Literal["message", "stored_output"] = Field(
        default="message",
        description="`message`: `observation` is what the model received (the call's message); `stored_output`: "
        "it is the tool's result as kept apart when the model received only its start (up to the profile's "
        "`max_stored_output_chars`).",
    )
    whole: bool = Field(
        default=True,
        description="True when `observation` is all the tool answered (redacted); false when it ends with "
        "`…[truncated N chars]`: cut for the model and not kept whole, or cut at `max_stored_output_chars`, or "
        "cut to fit one answer (at most about 5 MB once encoded).",
    )
    cut: ObservationCut | None = Field(
        default=None,
        description="Why `observation` is not the whole result (null when `whole`): `not_kept` (the model received "
        "its start and the rest was not kept), `stored_limit` (kept up to `max_stored_output_chars`), "
        "`answer_size` (cut to fit one answer).",
    )
    result_chars: int = Field(
        description="How many characters of the result `observation` carries: `observation_chars` when `whole`, "
        "else its length without the `…[truncated N chars]` marker it ends with."
    )
    received_chars: int | None = Field(
        default=None, description="The length of the observation the model received (the call's message)."
    )
