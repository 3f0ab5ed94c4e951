"""Requests and responses of the HTTP API; the OpenAPI document is generated from these models.

Every request model forbids unknown fields, so a misspelt field is a 422 naming it rather than a
silently ignored option, and is strict, so a value of the wrong JSON type is refused rather than
coerced. Limits that depend on the deployment (number of messages, input size) are in the
configuration (`api:`) and checked by `stepwise.steps.api`, not here.
"""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    computed_field,
    field_validator,
    model_validator,
)

from stepwise.inputs.json_schemas import checked_json_schema
from stepwise.models.run import (
    CompactionNote,
    IntentOutcome,
    ReplayLink,
    RunBudget,
    RunError,
    RunStatus,
    RunUsage,
    StopReason,
)

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"
SESSION_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,128}$"

METADATA_KEY_PATTERN = r"^[A-Za-z0-9_.:-]+$"
MAX_METADATA_PAIRS = 16

MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=METADATA_KEY_PATTERN)]
MetadataValue = Annotated[str, StringConstraints(max_length=256)]
# Pydantic would document the key pattern as `patternProperties`, which leaves any other key unconstrained in
# the OpenAPI document although it is refused; `propertyNames` says what the keys must be.
Metadata = Annotated[
    dict[MetadataKey, MetadataValue],
    Field(max_length=MAX_METADATA_PAIRS),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_METADATA_PAIRS,
            "propertyNames": {"minLength": 1, "maxLength": 64, "pattern": METADATA_KEY_PATTERN},
            "additionalProperties": {"type": "string", "maxLength": 256},
        }
    ),
]


class StrictRequest(BaseModel, defer_build=True):
    """A request body: unknown fields are refused, and so are values of the wrong JSON type."""

    # Strict: JSON of the wrong type is refused as the document says, never coerced (`"seed": false` is not 0).
    model_config = ConfigDict(extra="forbid", strict=True)


class TextPart(StrictRequest):
    """A text part of a message whose content is given as a list of parts (OpenAI style)."""

    type: Literal["text"]
    text: str


class ImageUrl(StrictRequest):
    """Where an image part's image is: a data: URL (base64 PNG, JPEG, GIF or WebP) or an https URL."""

    url: str = Field(min_length=1)
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(StrictRequest):
    """An image part of a user message (OpenAI style), for a profile whose model accepts images."""

    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class InputFunctionCall(StrictRequest):
    """The function an assistant message called, with its arguments as the JSON text the model wrote."""

    name: str = Field(min_length=1, max_length=128)
    arguments: str


class InputToolCall(StrictRequest):
    """A tool call of an earlier assistant message, sent back by the client with the call's result."""

    id: str = Field(min_length=1, max_length=128)
    type: Literal["function"] = "function"
    function: InputFunctionCall


class InputMessage(StrictRequest):
    """One message sent by the caller; `developer` is read as `system`, as OpenAI does.

    An assistant message may carry `tool_calls` (its content may then be null); a `tool` message
    answers one of them by `tool_call_id`.
    """

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = Field(default=None, max_length=64)
    tool_calls: list[InputToolCall] | None = None
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=128)

    @property
    def text(self) -> str:
        """The content as one string (text parts joined by newlines)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if isinstance(part, TextPart))

    @property
    def image_parts(self) -> list[ImagePart]:
        """The content's image parts, in order."""
        if not isinstance(self.content, list):
            return []
        return [part for part in self.content if isinstance(part, ImagePart)]

    @model_validator(mode="after")
    def _fields_fit_the_role(self) -> "InputMessage":
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only an assistant message may carry tool_calls")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError("content may be null only in an assistant message with tool_calls")
        if self.image_parts and self.role != "user":
            raise ValueError("only a user message may carry image parts")
        return self


def check_conversation(messages: list[InputMessage]) -> list[InputMessage]:
    if not messages:
        raise ValueError("must hold at least the user's question")
    last = messages[-1]
    if last.role not in ("user", "tool"):
        raise ValueError("the last message must be the user's question (role user) or a tool result (role tool)")
    if last.role == "user" and not last.text.strip() and not last.image_parts:
        raise ValueError("the last user message must not be empty")
    called = {call.id for message in messages for call in message.tool_calls or []}
    for message in messages:
        if message.role == "tool" and message.tool_call_id not in called:
            raise ValueError(f"the tool message for {message.tool_call_id} answers no assistant tool call before it")
    return messages


class RunRequest(StrictRequest):
    """`POST /v1/runs`: the question as `input`, or a conversation as OpenAI-style `messages`."""

    # The document says what `_one_question` checks, so that clients (and generated requests) know it.
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["input"], "properties": {"input": {"type": "string"}}},
                {"required": ["messages"], "properties": {"messages": {"type": "array"}}},
            ]
        }
    )

    # The schema keywords only document what the validators below check, with their clearer messages.
    input: str | None = Field(
        default=None,
        description="The question; give either input or messages.",
        json_schema_extra={"minLength": 1, "pattern": r"\S"},
    )
    messages: list[InputMessage] | None = Field(
        default=None,
        description="An OpenAI-style conversation ending with the user's question.",
        json_schema_extra={"minItems": 1},
    )
    session_id: str | None = Field(
        default=None,
        pattern=SESSION_ID_PATTERN,
        description="Continue a multi-turn session: the run starts from the session's earlier turns.",
    )
    profile: str | None = Field(
        default=None, min_length=1, max_length=64, description="The agent profile; by default intent routing picks it."
    )
    metadata: Metadata = Field(default_factory=dict, description="Up to 16 string pairs stored with the run.")
    budget: RunBudget | None = Field(
        default=None, description="Caps on the run's tokens and cost; the profile's own caps still apply."
    )
    response_schema: dict[str, Any] | None = Field(
        default=None,
        description="A JSON schema (top-level type object or array) the answer is also given as, in `output`; "
        "over the profile's own.",
    )

    @field_validator("response_schema")
    @classmethod
    def _output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        value = checked_json_schema(value)
        if value is not None and value.get("type") not in ("object", "array"):
            raise ValueError('the top-level "type" must be "object" or "array"')
        return value

    @field_validator("input")
    @classmethod
    def _input_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("messages")
    @classmethod
    def _messages_end_with_question(cls, value: list[InputMessage] | None) -> list[InputMessage] | None:
        return None if value is None else check_conversation(value)

    @model_validator(mode="after")
    def _one_question(self) -> "RunRequest":
        if (self.input is None) == (self.messages is None):
            raise ValueError("give exactly one of input or messages")
        return self


class RunAccepted(BaseModel, defer_build=True):
    """The answer to `POST /v1/runs`: the run is stored and its execution started."""

    run_id: str
    status: RunStatus
    profile: str
    intent: dict[str, str]
    session_id: str | None = None
    poll_url: str = Field(description="Where to GET the run's status and answer.")


class ReplayRequest(StrictRequest):
    """`POST /v1/runs/{run_id}/replay`: run a stored run again under a profile, its tools answered from the
    recording."""

    profile: str | None = Field(
        default=None, min_length=1, max_length=64, description="The profile to replay under; by default the original's."
    )
    from_iteration: int = Field(
        default=0,
        ge=0,
        le=10_000,
        description="Keep the original's first iterations as stored and let the model go on after them (a fork); "
        "below the original's number of iterations.",
    )
    live_tools: bool = Field(
        default=False,
        description="A call the recording lacks runs for real when its tool is read-only and needs no approval; "
        "otherwise it is answered 'not recorded'.",
    )
    metadata: Metadata = Field(default_factory=dict, description="Up to 16 string pairs stored with the new run.")


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
    observation: str | None = Field(default=None, description="The start of the tool's observation.")
    decision: str | None = None
    answer: str | None = None
    ok: bool | None = None
    final_round: bool | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = Field(default=None, description="The part of the output spent thinking.")
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


# The approver's reason reaches the model as part of an observation: short, like a review comment.
MAX_APPROVAL_REASON_CHARS = 2000


class ApprovalRequest(StrictRequest):
    """`POST /v1/runs/{run_id}/approvals/{call_id}`: approve or deny one tool call paused for approval."""

    approved: bool = Field(description="true runs the call; false does not, and the model is told it was denied.")
    reason: str | None = Field(
        default=None,
        max_length=MAX_APPROVAL_REASON_CHARS,
        description="Why; on a denial the model reads it in the call's observation.",
    )


class PendingApproval(BaseModel, defer_build=True):
    """A tool call waiting for approval: what would run, and until when it waits."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    iteration: int
    requested_at: str
    timeout_at: str = Field(description="Unanswered by then, the call is denied (not run).")


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


class RunEvents(BaseModel, defer_build=True):
    """`GET /v1/runs/{run_id}/events`: the steps stored after the cursor, in the order they happened."""

    run_id: str
    status: RunStatus
    done: bool = Field(description="The run has ended: no step will follow these.")
    events: list[TraceStep]
    next_cursor: str = Field(description="Pass as `after` to get the steps stored after these.")


class RunListItem(BaseModel, defer_build=True):
    """One run in `GET /v1/runs`: enough to choose which one to read."""

    run_id: str
    status: RunStatus
    profile: str
    session_id: str | None = None
    iterations: int
    stop_reason: StopReason | None = None
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
