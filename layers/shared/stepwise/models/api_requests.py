"""Requests of the HTTP API; the OpenAPI document is generated from these models (the answers are in
`stepwise.models.api_responses`).

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
    field_validator,
    model_validator,
)

from stepwise.inputs.json_schemas import checked_json_schema
from stepwise.models.run import (
    RunBudget,
)

RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"
SESSION_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,128}$"

MAX_METADATA_PAIRS = 16
# OpenAI's own limits on metadata (keys of any 64 characters, values of 512), so a chat completion's
# `metadata` OpenAI takes is taken here too.
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512

MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=MAX_METADATA_KEY_CHARS)]
MetadataValue = Annotated[str, StringConstraints(max_length=MAX_METADATA_VALUE_CHARS)]
# Pydantic would document the key's limits as `patternProperties`, which leaves any other key unconstrained in
# the OpenAPI document although it is refused; `propertyNames` says what the keys must be.
Metadata = Annotated[
    dict[MetadataKey, MetadataValue],
    Field(max_length=MAX_METADATA_PAIRS),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_METADATA_PAIRS,
            "propertyNames": {"minLength": 1, "maxLength": MAX_METADATA_KEY_CHARS},
            "additionalProperties": {"type": "string", "maxLength": MAX_METADATA_VALUE_CHARS},
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


class RefusalPart(StrictRequest):
    """A refusal part of an assistant message (OpenAI style): what the model declined to do, read as its text."""

    type: Literal["refusal"]
    refusal: str


ContentPart = Annotated[TextPart | ImagePart | RefusalPart, Field(discriminator="type")]


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
    answers one of them by `tool_call_id`. An assistant message as an OpenAI answer holds it (`refusal`,
    `audio`, `annotations`, and the `reasoning_content` Stepwise answers with) is taken back as it is: the
    `openai` SDK sends a message object appended to the conversation with the fields its answer had.
    """

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = Field(default=None, max_length=64)
    tool_calls: list[InputToolCall] | None = None
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=128)
    refusal: str | None = Field(default=None, description="An assistant's refusal; read as its text.")
    audio: dict[str, Any] | None = Field(default=None, description="An assistant's audio reference; ignored.")
    annotations: list[Any] | None = Field(default=None, description="An assistant answer's citations; ignored.")
    reasoning_content: str | None = Field(
        default=None, description="What an assistant thought, as Stepwise answers it; not sent to the model."
    )

    @property
    def text(self) -> str:
        """The content as one string (text and refusal parts joined by newlines); an assistant's `refusal` when
        it has no content."""
        if self.content is None:
            return self.refusal or ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            part.text if isinstance(part, TextPart) else part.refusal
            for part in self.content
            if not isinstance(part, ImagePart)
        )

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
        answer_fields = (self.refusal, self.audio, self.annotations, self.reasoning_content)
        if self.role != "assistant" and any(value is not None for value in answer_fields):
            raise ValueError("only an assistant message may carry refusal, audio, annotations or reasoning_content")
        if self.content is None and not (
            self.role == "assistant" and (self.tool_calls or self.refusal is not None or self.audio is not None)
        ):
            raise ValueError("content may be null only in an assistant message with tool_calls, refusal or audio")
        if self.image_parts and self.role != "user":
            raise ValueError("only a user message may carry image parts")
        parts = self.content if isinstance(self.content, list) else []
        if self.role != "assistant" and any(isinstance(part, RefusalPart) for part in parts):
            raise ValueError("only an assistant message may carry refusal parts")
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


ARGUMENTS_SHA256_PATTERN = r"^[0-9a-f]{64}$"
# The approver's reason reaches the model as part of an observation: short, like a review comment.
MAX_APPROVAL_REASON_CHARS = 2000


class BudgetRequest(StrictRequest):
    """`POST /v1/runs/{run_id}/budget`: raise the budget of a run waiting at it (WAITING_BUDGET), or end the run.

    Give `add_tokens`, `add_usd` or both to raise the caps by that much; or `{"end": true}` to end the run
    with its best answer.
    """

    add_tokens: int | None = Field(
        default=None, ge=1, le=100_000_000, description="Tokens added to the run's max_total_tokens."
    )
    add_usd: float | None = Field(default=None, gt=0, le=10_000, description="Dollars added to the run's max_cost_usd.")
    end: bool = Field(default=False, description="true ends the run now with its best answer.")

    @model_validator(mode="after")
    def _one_answer(self) -> "BudgetRequest":
        raising = self.add_tokens is not None or self.add_usd is not None
        if self.end and raising:
            raise ValueError("give end: true alone, or add_tokens and/or add_usd, not both")
        if not self.end and not raising:
            raise ValueError("give add_tokens, add_usd, or end: true")
        return self


class MessageRequest(StrictRequest):
    """`POST /v1/runs/{run_id}/messages`: tell a running run something; its next model call sees it."""

    # capped by the configuration (`api.max_input_chars`, checked by the route) and the body's size, as `input` is
    content: str = Field(
        min_length=1, description="The message, as a user message. At most the API's `max_input_chars` characters."
    )


class ApprovalRequest(StrictRequest):
    """`POST /v1/runs/{run_id}/approvals/{call_id}`: approve or deny one tool call paused for approval."""

    approved: bool = Field(description="true runs the call; false does not, and the model is told it was denied.")
    reason: str | None = Field(
        default=None,
        max_length=MAX_APPROVAL_REASON_CHARS,
        description="Why; on a denial the model reads it in the call's observation.",
    )
    arguments_sha256: str | None = Field(
        default=None,
        pattern=ARGUMENTS_SHA256_PATTERN,
        description="The `arguments_sha256` of the call as it was shown (lowercase hex): the answer is refused "
        "with 409 `approval_stale` when the call waiting now has other arguments. Optional, but checked when sent.",
    )
