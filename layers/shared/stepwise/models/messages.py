"""Messages, tool calls and tool specs: the vocabulary shared by the store, providers and protocols.

Stored messages are canonical (OpenAI-like roles, tool calls with parsed arguments); each protocol
renders them into what its model expects and parses the model's answer back.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
ImageMediaType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class ImageInput(BaseModel):
    """An image of a user message: its bytes (base64) with their media type, or an https URL the
    provider fetches itself (OpenAI-compatible providers only: Bedrock takes bytes)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    media_type: ImageMediaType | None = None
    data: str | None = None
    url: str | None = None
    detail: Literal["auto", "low", "high"] | None = None

    @property
    def as_url(self) -> str:
        """The image as OpenAI's `image_url.url`: the https URL, or a data: URL of the bytes."""
        return self.url if self.url is not None else f"data:{self.media_type};base64,{self.data}"


class ToolCall(BaseModel):
    """One tool invocation the model asked for, arguments already decoded to a JSON object."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ReasoningBlock(BaseModel):
    """What a model thought before it replied, kept apart from the reply.

    `text` is the reasoning as the provider showed it (a `<think>` block, `reasoning_content`, a summary);
    `signature` is the provider's seal over it (Claude's thinking blocks), which makes the block one the
    provider accepts back; `redacted` is reasoning the provider encrypted (base64), returned as it came.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    text: str = ""
    signature: str | None = None
    redacted: str | None = None

    @property
    def signed(self) -> bool:
        """True for a block the provider sealed or encrypted: it can be sent back exactly as received."""
        return bool(self.signature or self.redacted)


class ChatMessage(BaseModel):
    """One message of a conversation, as stored and as handed to a protocol.

    An assistant message's `reasoning` is never part of its `content`: it is shown as its own trace step
    and sent back to the provider only where the provider requires it (see `stepwise.llm.reasoning`).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # images of a user message, forwarded to models whose catalog entry accepts them
    images: list[ImageInput] = Field(default_factory=list)
    reasoning: list[ReasoningBlock] = Field(default_factory=list)


# The tool search a profile with too many tools offers instead of them (stepwise.tools.find_tools); no
# other tool may have its name.
FIND_TOOLS = "find_tools"


class ToolSpec(BaseModel):
    """What a model is told about a tool: its name, purpose and JSON-schema parameters."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Usage(BaseModel, defer_build=True):
    """Token counts reported by a provider for one completion.

    `input_tokens` counts every prompt token, cached or not (OpenAI's `prompt_tokens`; Converse's
    `inputTokens` plus its cache reads and writes); `cache_read_tokens` and `cache_write_tokens` say how
    many of them were read from or written to the provider's prompt cache, which bills them apart.
    `reasoning_tokens` are the part of `output_tokens` the model spent thinking.

    `unreliable` says why the provider's counts could not be used (missing, not numbers, negative, beyond
    any window, contradicting each other: `stepwise.protocols.usage_fields`); the counts are then Stepwise's
    estimate once a step has made it (`stepwise.steps.usage_estimate`), zeros before.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    unreliable: str | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class Completion(BaseModel, defer_build=True):
    """A provider's answer normalised: text, native tool calls, reasoning, usage and the finish reason."""

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    reasoning: list[ReasoningBlock] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    # the provider's own words on why it stopped, when it gives them (Gemini's `finishMessage`: the call it could
    # not read), passed on to the model with an empty reply's reason
    finish_message: str | None = None
    # the provider's id of this completion (OpenAI's `id`), for the model call's span
    response_id: str | None = None
    # characters of the reply's text that could not be encoded and were replaced by U+FFFD (for the trace)
    replaced_characters: int = 0
    # tools the provider ran itself within this reply (Nova's web grounding), by name: recorded, never run here
    server_tools: list[str] = Field(default_factory=list)


class SamplingOptions(BaseModel):
    """Sampling settings beyond temperature and max_tokens; each provider sends those it takes."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    seed: int | None = None
    reasoning_effort: str | None = None


ToolChoice = Literal["auto", "required", "none"] | str

ReasoningEffort = Literal["low", "medium", "high"]
# How a model is told to think, as its provider documents it (the model catalog's `reasoning.control`).
ReasoningControl = Literal[
    "anthropic_budget",
    "anthropic_adaptive",
    "nova",
    "openai_effort",
    "qwen_enable_thinking",
    "chat_template_kwargs",
    "deepseek_thinking",
]
# How reasoning goes back to an OpenAI-compatible model on its tool-call turns, where it must.
ReasoningPassBack = Literal["none", "reasoning_content", "think_tags"]


class ReasoningRequest(BaseModel):
    """Thinking asked of one model call, already resolved against the model catalog.

    `effort` and `budget_tokens` are what the profile asked for (a budget-only control gets a budget from
    the effort); `drop_sampling` lists the sampling fields the model refuses while it thinks. `asked` is
    false when no profile asked and the model thinks by its own default (nothing is sent to ask for it, its
    rules for thinking still apply); `default_on` says the model thinks unless told not to.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    control: ReasoningControl
    enabled: bool = True
    effort: ReasoningEffort | None = None
    budget_tokens: int | None = None
    drop_sampling: list[str] = Field(default_factory=list)
    asked: bool = True
    default_on: bool = False


class ChatRequest(BaseModel, defer_build=True):
    """Everything a provider needs for one call; `tools` is empty when tools are not offered."""

    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    stop: list[str] = Field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    response_schema: dict[str, Any] | None = None
    sampling: SamplingOptions = Field(default_factory=SamplingOptions)
    # The most this call may wait for the model (the run's deadline); the model's own timeout when shorter.
    timeout_seconds: float | None = Field(default=None, gt=0)
    reasoning: ReasoningRequest | None = None
    # Sent with assistant messages that called tools, where the provider requires it (`ReasoningPassBack`).
    reasoning_pass_back: ReasoningPassBack = "none"
    # The model's turns of this run a summary stands for (not in `messages`): a provider that plays turns by
    # position, the scripted model, counts them; none sends it.
    turns_before: int = Field(default=0, ge=0)
