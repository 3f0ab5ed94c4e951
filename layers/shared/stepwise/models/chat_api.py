"""The OpenAI-compatible chat completions facade: requests as OpenAI clients send them, and the answers.

Every field of OpenAI's own request (the `openai` SDK's `CompletionCreateParams`) is accepted, so a newer
client is never refused for a field OpenAI takes; a misspelt one is still refused, naming it. Sampling
fields reach the model where the profile's provider takes them (see `stepwise.llm`); the legacy
`functions` and `function_call` are the client's tools under their old names, answered in the old shape;
the fields that mean nothing for an agent's run (`IGNORED_FIELDS`) are accepted and ignored, and the
answer names those a request set (`IGNORED_FIELDS_HEADER`). `docs/http-api.md` lists what goes where.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stepwise.models.api_requests import InputMessage, Metadata, StrictRequest, check_conversation
from stepwise.models.messages import FIND_TOOLS
from stepwise.models.openai_fields import IGNORED_FIELDS, legacy_function_messages
from stepwise.models.run import Outcome, StopReason

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# OpenAI accepts up to 128 tools and 4 stop sequences per request.
MAX_CLIENT_TOOLS = 128
MAX_STOP_SEQUENCES = 4
# The fields OpenAI's request takes as null whose default here is not null: null is their default.
_NULL_MEANS_DEFAULT = frozenset({"n", "stream", "metadata"})


class StreamOptions(StrictRequest):
    """OpenAI `stream_options`: `include_usage` adds a last chunk with the usage. `include_obfuscation` is
    accepted and ignored: a stream is never padded (its chunks hold the run's steps, not OpenAI's token deltas)."""

    include_usage: bool = False
    include_obfuscation: bool | None = None


class TextFormat(StrictRequest):
    """`response_format: {"type": "text"}`: a plain answer (the default)."""

    type: Literal["text"]


class JsonObjectFormat(StrictRequest):
    """`response_format: {"type": "json_object"}`: the answer is one JSON object."""

    type: Literal["json_object"]


class JsonSchemaSpec(StrictRequest):
    """The schema of `response_format: {"type": "json_schema"}`."""

    name: str = Field(min_length=1, max_length=64, pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    # `schema` would shadow a BaseModel attribute; the JSON field keeps OpenAI's name.
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None

    model_config = ConfigDict(populate_by_name=True)


class JsonSchemaFormat(StrictRequest):
    """`response_format: {"type": "json_schema", "json_schema": {...}}`: the answer matches the schema."""

    type: Literal["json_schema"]
    json_schema: JsonSchemaSpec


ResponseFormat = Annotated[TextFormat | JsonObjectFormat | JsonSchemaFormat, Field(discriminator="type")]


class ClientFunction(StrictRequest):
    """A function the client offers: its name, purpose and JSON-schema parameters."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ClientTool(StrictRequest):
    """A tool sent by the client (OpenAI `tools` item); a call to it is handed back to the client."""

    type: Literal["function"]
    function: ClientFunction


class NamedFunction(StrictRequest):
    """The function a `tool_choice` object names."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)


class NamedToolChoice(StrictRequest):
    """`tool_choice: {"type": "function", "function": {"name": ...}}`."""

    type: Literal["function"]
    function: NamedFunction


class ChatCompletionRequest(StrictRequest):
    """`POST /v1/chat/completions`, as an OpenAI client sends it.

    `model` names an agent profile when it is one; any other value lets intent routing choose, and is
    echoed back. Sampling fields go to the model when the profile's provider takes them; `tools` (or the
    legacy `functions`) are offered beside the profile's tools, and a call to one of them ends the run
    with `tool_calls` (`function_call`). The fields of `IGNORED_FIELDS` are accepted and ignored.
    """

    model: str = Field(min_length=1, max_length=128)
    messages: list[InputMessage] = Field(
        json_schema_extra={"minItems": 1},
        description="The conversation; the legacy `function` role and assistant `function_call` are read as "
        "a tool result and a tool call.",
    )
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1, description="Only one choice is produced.")
    user: str | None = Field(default=None, max_length=256, description="Accepted; not sent to the model.")
    metadata: Metadata = Field(default_factory=dict, description="Stored with the run; not sent to the model.")
    store: bool | None = Field(default=None, description="Accepted and ignored: every run is stored.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = Field(default=None, max_length=300)
    seed: int | None = None
    stop: str | list[str] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool | None = Field(default=None, description="Accepted; the answer is the agent's, without logprobs.")
    top_logprobs: int | None = Field(default=None, ge=0, le=20, description="Accepted and ignored, as logprobs.")
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None, description="Over the profile's `reasoning:` effort (none is enabled: false; above high is high)."
    )
    response_format: ResponseFormat | None = None
    tools: list[ClientTool] | None = Field(default=None, max_length=MAX_CLIENT_TOOLS)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    functions: list[ClientFunction] | None = Field(
        default=None,
        max_length=MAX_CLIENT_TOOLS,
        description="Legacy `tools`: offered the same way, one call at a time, answered as `function_call`.",
    )
    function_call: Literal["none", "auto"] | NamedFunction | None = Field(
        default=None, description="Legacy `tool_choice`, with `functions`."
    )
    modalities: list[Literal["text", "audio"]] | None = Field(
        default=None, description="Accepted with text alone: the answer is text."
    )
    service_tier: str | None = Field(default=None, max_length=64, description="Accepted and ignored.")
    audio: dict[str, Any] | None = Field(default=None, description="Accepted and ignored: the answer is text.")
    prediction: dict[str, Any] | None = Field(default=None, description="Accepted and ignored.")
    web_search_options: dict[str, Any] | None = Field(
        default=None, description="Accepted and ignored: the profile's tools are the run's tools."
    )
    moderation: dict[str, Any] | None = Field(default=None, description="Accepted and ignored.")
    prompt_cache_key: str | None = Field(default=None, max_length=1024, description="Accepted and ignored.")
    prompt_cache_options: dict[str, Any] | None = Field(default=None, description="Accepted and ignored.")
    prompt_cache_retention: str | None = Field(default=None, max_length=64, description="Accepted and ignored.")
    safety_identifier: str | None = Field(default=None, max_length=256, description="Accepted; not sent to the model.")
    verbosity: str | None = Field(default=None, max_length=64, description="Accepted and ignored.")

    @model_validator(mode="before")
    @classmethod
    def _null_is_the_default(cls, value: Any) -> Any:
        # OpenAI's request takes null for these (the SDK sends `n=None` as null): the default, as when left out.
        if isinstance(value, dict):
            return {key: item for key, item in value.items() if item is not None or key not in _NULL_MEANS_DEFAULT}
        return value

    @field_validator("messages", mode="before")
    @classmethod
    def _legacy_functions_as_tools(cls, value: Any) -> Any:
        return legacy_function_messages(value) if isinstance(value, list) else value

    @field_validator("messages")
    @classmethod
    def _ends_with_question(cls, value: list[InputMessage]) -> list[InputMessage]:
        return check_conversation(value)

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[ClientTool] | None) -> list[ClientTool] | None:
        _check_function_names([tool.function for tool in value or []])
        return value

    @field_validator("functions")
    @classmethod
    def _function_names(cls, value: list[ClientFunction] | None) -> list[ClientFunction] | None:
        _check_function_names(value or [])
        return value

    @field_validator("modalities")
    @classmethod
    def _text_only(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and "audio" in value:
            raise ValueError('the answer is text: leave "audio" out')
        return value

    @model_validator(mode="after")
    def _one_way_to_offer_tools(self) -> "ChatCompletionRequest":
        if self.functions is not None and self.tools is not None:
            raise ValueError("give tools or the legacy functions, not both")
        if self.function_call is not None and self.functions is None:
            raise ValueError("function_call chooses among functions; send functions with it (or use tool_choice)")
        if self.function_call is not None and self.tool_choice is not None:
            raise ValueError("give tool_choice or the legacy function_call, not both")
        return self

    @property
    def client_functions(self) -> list[ClientFunction]:
        """The functions the client offers, given as `tools` or as the legacy `functions`."""
        if self.functions is not None:
            return self.functions
        return [tool.function for tool in self.tools or []]

    @property
    def ignored_fields(self) -> list[str]:
        """The fields of `IGNORED_FIELDS` this request set, in that order."""
        return [name for name in IGNORED_FIELDS if getattr(self, name) is not None]

    @field_validator("stop")
    @classmethod
    def _few_stops(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > MAX_STOP_SEQUENCES:
            raise ValueError(f"at most {MAX_STOP_SEQUENCES} stop sequences")
        return value

    @field_validator("logit_bias")
    @classmethod
    def _bias_range(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for token, bias in (value or {}).items():
            if not token.isdigit() or not -100 <= bias <= 100:
                raise ValueError("maps token ids (digits) to a bias from -100 to 100")
        return value


def _check_function_names(functions: list[ClientFunction]) -> None:
    names = [function.name for function in functions]
    if FIND_TOOLS in names:
        raise ValueError(f"{FIND_TOOLS} is the name of Stepwise's own tool search; give the tool another name")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"each tool needs its own name; {', '.join(repeated)} is given more than once")


class FunctionCall(BaseModel, defer_build=True):
    """The function a tool call names, with its arguments as JSON text (as OpenAI sends them)."""

    name: str
    arguments: str


class OutputToolCall(BaseModel, defer_build=True):
    """A call of one of the client's tools, for the client to run and answer with a `tool` message."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


# `function_call`: the run ended with a call of a function the client offered as legacy `functions`.
FinishReason = Literal["stop", "length", "tool_calls", "function_call", "content_filter"]


class AssistantMessage(BaseModel, defer_build=True):
    """The agent's answer as a chat message, or its calls of the client's tools (`function_call` for a
    request that offered them as legacy `functions`)."""

    role: Literal["assistant"] = "assistant"
    content: str | None
    # What the model thought on the way, where DeepSeek and vLLM put it: clients show it apart from the answer.
    reasoning_content: str | None = None
    tool_calls: list[OutputToolCall] | None = None
    function_call: FunctionCall | None = None


class ChatChoice(BaseModel, defer_build=True):
    """The one choice of a completion."""

    index: int = 0
    message: AssistantMessage
    finish_reason: FinishReason
    logprobs: None = None


class PromptTokensDetails(BaseModel, defer_build=True):
    """Of the prompt tokens, those read from the provider's prompt cache and those written to it."""

    cached_tokens: int = 0
    cache_write_tokens: int = 0


class CompletionTokensDetails(BaseModel, defer_build=True):
    """Of the completion tokens, those the model spent thinking."""

    reasoning_tokens: int = 0


class CompletionUsage(BaseModel, defer_build=True):
    """Token counts of the whole run, in OpenAI's names and shapes."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails = Field(default_factory=PromptTokensDetails)
    completion_tokens_details: CompletionTokensDetails = Field(default_factory=CompletionTokensDetails)


class RunEnding(BaseModel, defer_build=True):
    """How the run behind a completion ended: its `stepwise` field (OpenAI clients keep fields they do not
    know). `partial` goes with `finish_reason: length`."""

    outcome: Outcome
    stop_reason: StopReason | None = None


class ChatCompletion(BaseModel, defer_build=True):
    """An OpenAI `chat.completion`, plus `run_id` so the run's trace can be read, and how the run ended."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: CompletionUsage
    run_id: str
    stepwise: RunEnding


class ChunkToolCall(BaseModel, defer_build=True):
    """A tool call in a streamed chunk, sent whole in one delta."""

    index: int
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChunkDelta(BaseModel, defer_build=True):
    """What a streamed chunk adds to the message."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    # What the model thought, where DeepSeek and vLLM stream it: clients show it apart from the answer.
    reasoning_content: str | None = None
    tool_calls: list[ChunkToolCall] | None = None
    function_call: FunctionCall | None = None


class ChunkChoice(BaseModel, defer_build=True):
    """The one choice of a streamed chunk."""

    index: int = 0
    delta: ChunkDelta
    finish_reason: FinishReason | None = None


class ChatCompletionChunk(BaseModel, defer_build=True):
    """An OpenAI `chat.completion.chunk`, one server-sent event of a streamed answer."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None


class ModelCard(BaseModel, defer_build=True):
    """One agent profile as an OpenAI model (`GET /v1/models`, `GET /v1/models/{model_id}`)."""

    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "stepwise"
    # Not in OpenAI's model object; clients read the fields they know and ignore this one.
    description: str | None = None


class ModelList(BaseModel, defer_build=True):
    """`GET /v1/models`: the agent profiles a request's `model` may name."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class ChatStreamStart(BaseModel, defer_build=True):
    """What the API function answers (202) to a marked streamed request: the run and the chunks' ids."""

    run_id: str
    model: str
    created: int
    include_usage: bool
    ignored_fields: list[str] = Field(default_factory=list, description="For the answer's ignored-fields header.")
    profile: str | None = Field(default=None, description="The run's profile, whose output guardrails the steps pass.")
