"""Configuration of a chat model: which provider, how to reach it, and what it can do.

Every model forbids unknown fields, so a typo in a profile fails loudly with the field's name instead of
being silently ignored. `ModelConfig` is the discriminated union a profile's `model:` entry is read into.
"""

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stepwise.config.control_chars import without_control_characters
from stepwise.config.tool_call_rules import HEADER_NAME
from stepwise.config.url_checks import check_client_url
from stepwise.patterns.linear import PatternError, check_pattern


class ModelCapabilities(BaseModel):
    """What a model supports, so protocols and providers only use features that exist."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    native_tools: bool = False
    parallel_tools: bool = False
    stop_sequences: bool = True
    json_mode: bool = False
    # Tools are sent with OpenAI's `strict: true` where their schema has a strict form (stepwise.tools.strict_schema).
    strict_tools: bool = False


class ModelPrices(BaseModel):
    """What a model's tokens cost, in US dollars per million, as its provider bills them.

    Tokens read from or written to the prompt cache are billed at their own rates when the provider has
    them (a tenth of the input price to read, 1.25 times to write, for Claude); else as input.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)
    cache_read_per_million: float | None = Field(default=None, ge=0)
    cache_write_per_million: float | None = Field(default=None, ge=0)
    # Where a provider bills thinking apart from the answer; otherwise reasoning tokens cost as output.
    reasoning_per_million: float | None = Field(default=None, ge=0)

    def cost_usd(
        self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0, reasoning: int = 0
    ) -> float:
        """The cost of these tokens; `input_tokens` counts every prompt token, the cached ones included, and
        `output_tokens` every output token, the `reasoning` ones (spent thinking) included."""
        read_rate = self.input_per_million if self.cache_read_per_million is None else self.cache_read_per_million
        write_rate = self.input_per_million if self.cache_write_per_million is None else self.cache_write_per_million
        reasoning_rate = self.output_per_million if self.reasoning_per_million is None else self.reasoning_per_million
        uncached = max(0, input_tokens - cache_read - cache_write)
        thought = min(reasoning, output_tokens)
        dollars_per_million = (
            uncached * self.input_per_million
            + cache_read * read_rate
            + cache_write * write_rate
            + (output_tokens - thought) * self.output_per_million
            + thought * reasoning_rate
        )
        return dollars_per_million / 1_000_000


class OpenAIModelConfig(BaseModel):
    """A model behind an OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, Ollama, ...).

    `api_key` may be a secret reference (`ssm:...`, `secretsmanager:...`); the factory resolves it.
    It is excluded from `repr` so a logged config never shows it.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    provider: Literal["openai"]
    base_url: str
    model: str = Field(min_length=1)
    api_key: str | None = Field(default=None, repr=False)
    timeout_seconds: float = Field(default=30, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0)
    headers: dict[str, str] = Field(default_factory=dict)
    capabilities: ModelCapabilities = Field(default_factory=ModelCapabilities)
    prices: ModelPrices | None = None
    # What the model takes in and gives out, for a model the catalog does not know (or to override it)
    context_window: int | None = Field(default=None, ge=1024)
    max_output_tokens: int | None = Field(default=None, ge=1)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an http:// or https:// URL with a host")
        check_client_url(value, what="base_url")
        # The endpoint path is appended with a slash; a trailing one here would double it.
        return value.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _sendable_key(cls, key: str | None) -> str | None:
        return None if key is None else without_control_characters(key, what="api_key")

    @field_validator("headers")
    @classmethod
    def _sendable_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not HEADER_NAME.fullmatch(name):
                raise ValueError(f"headers: {name!r} is not a valid HTTP header name")
            without_control_characters(value, what=f"headers: the value of {name}")
        return headers


class BedrockModelConfig(BaseModel):
    """A model on Amazon Bedrock, called through the Converse API."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    provider: Literal["bedrock"]
    model_id: str = Field(min_length=1)
    region: str | None = None
    timeout_seconds: float = Field(default=60, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0)
    capabilities: ModelCapabilities = Field(default_factory=ModelCapabilities)
    prices: ModelPrices | None = None
    # What the model takes in and gives out, for a model the catalog does not know (or to override it)
    context_window: int | None = Field(default=None, ge=1024)
    max_output_tokens: int | None = Field(default=None, ge=1)


class ScriptToolCall(BaseModel):
    """A native tool call a scripted turn returns."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptUsage(BaseModel):
    """Token counts a scripted turn reports instead of the length-based estimate."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


class ScriptTurn(BaseModel):
    """One reply of a scripted model: text, native tool calls, or both."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    content: str = ""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    usage: ScriptUsage | None = None
    latency_ms: int = Field(default=0, ge=0)


class ScriptScenario(BaseModel):
    """The replies played when `match` (a case-insensitive regex) is found in the first user message.

    A scenario without `match` is the default, played when no other scenario matches.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    match: str | None = None
    turns: list[ScriptTurn] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _check_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_pattern(value, ignore_case=True)
            except PatternError as exc:
                raise ValueError(exc.reason) from None
        return value


class ScriptedModelConfig(BaseModel):
    """A scripted model for demos and tests: scenarios from a file (`script`) or inline (`scenarios`).

    `script` is a path relative to the configuration directory. Exactly one of the two is given.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    provider: Literal["scripted"]
    script: str | None = Field(default=None, min_length=1)
    scenarios: list[ScriptScenario] | None = Field(default=None, min_length=1)
    capabilities: ModelCapabilities = Field(default_factory=ModelCapabilities)
    prices: ModelPrices | None = None
    # What the model takes in and gives out, for a model the catalog does not know (or to override it)
    context_window: int | None = Field(default=None, ge=1024)
    max_output_tokens: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check_one_source(self) -> "ScriptedModelConfig":
        if (self.script is None) == (self.scenarios is None):
            raise ValueError("give exactly one of 'script' (a file) or 'scenarios' (inline)")
        return self


ModelConfig = Annotated[OpenAIModelConfig | BedrockModelConfig | ScriptedModelConfig, Field(discriminator="provider")]
