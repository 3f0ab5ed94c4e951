"""The model catalog: what each model is, as data — its window, largest output, prices, lifecycle, the
parameter rules its provider enforces, and what it accepts.

One YAML file ships in the package (`model_catalog.yaml`); a configuration may add or override entries
under `model_catalog:`, which are tried first. An entry names its models by glob patterns on the id the
provider is asked for (lower-cased, a cross-region inference profile's `us.`/`eu.`/`apac.`/`global.`...
prefix and an application inference profile's ARN resolved by the caller); the first entry that matches
wins, so a specific entry goes before a family's. Request shaping, budgets, cost and context management
read a model's facts from here (`StepwiseConfig.model_facts`); nothing else hard-codes a model fact.
"""

from __future__ import annotations

import fnmatch
from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from stepwise.errors import ConfigError
from stepwise.inputs.validation_problems import describe_problems
from stepwise.models.messages import ReasoningControl, ReasoningEffort, ReasoningPassBack

CATALOG_FILE = Path(__file__).with_name("model_catalog.yaml")

# Model ids a catalog remembers the entry of: a configuration names a handful.
_REMEMBERED_IDS = 256
# Cross-region inference profile ids put a geography before the model id (`us.anthropic.claude-...`).
INFERENCE_PROFILE_PREFIXES = ("global.", "us-gov.", "us.", "eu.", "apac.", "jp.", "au.", "ca.")

SamplingField = Literal[
    "temperature", "top_p", "top_k", "frequency_penalty", "presence_penalty", "logit_bias", "seed", "stop"
]


class CatalogPrices(BaseModel):
    """US dollars per million tokens, as the provider bills them; cache and reasoning rates where separate."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    # Reasoning tokens are billed as output by every provider listed so far; a separate rate goes here.
    reasoning: float | None = Field(default=None, ge=0)


class Lifecycle(BaseModel):
    """When the provider released the model, marked it legacy, and ends it (calls fail from then on)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    released: date | None = None
    legacy: date | None = None
    end_of_life: date | None = None


class ParameterRules(BaseModel):
    """What the provider refuses or renames, applied to a request before it leaves."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    # Groups of fields of which at most one may be sent (Claude 4.5 and later: temperature or top_p).
    exclusive: list[list[SamplingField]] = Field(default_factory=list)
    # Fields the model refuses outright (OpenAI's reasoning models: temperature, top_p, ...).
    unsupported: list[SamplingField] = Field(default_factory=list)
    # Fields refused while reasoning (extended thinking) is on.
    unsupported_when_reasoning: list[SamplingField] = Field(default_factory=list)
    # The name of the output cap in an OpenAI-compatible request.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"


class Accepts(BaseModel):
    """What the model takes besides text."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    tools: bool = True
    images: bool = False
    reasoning: bool = False
    prompt_cache: bool = False


CacheField = Literal["system", "tools", "messages"]


def _every_cache_field() -> list[CacheField]:
    return ["system", "tools", "messages"]


class PromptCache(BaseModel):
    """How this model's prompt prefix is cached, as its provider's documentation says.

    `automatic`: the provider caches by itself (OpenAI, DeepSeek, vLLM's prefix cache) and reports the
    cached tokens, nothing is marked; `explicit`: the request marks checkpoints (Claude, Nova) — Converse
    `cachePoint` blocks on Bedrock, Anthropic's `cache_control` on an OpenAI-compatible endpoint.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    style: Literal["automatic", "explicit"]
    # The shortest prefix the provider caches; a checkpoint before it is ignored (Bedrock) or refused.
    min_tokens: int = Field(default=1024, ge=1)
    max_checkpoints: int = Field(default=4, ge=0)
    # Where checkpoints may go (Bedrock model cards list `system`, `messages`, `tools`).
    fields: list[CacheField] = Field(default_factory=_every_cache_field)


class ReasoningFacts(BaseModel):
    """How the model is told to think, and whether its reasoning must go back on its tool-call turns.

    `control` names the request fields its provider documents (see `stepwise.llm.reasoning`); `pass_back`
    is how an OpenAI-compatible server wants the reasoning of earlier tool-call turns back (DeepSeek refuses
    a tool loop without it). Bedrock's signed thinking blocks always go back on tool-use turns.

    `by_default`: the model thinks when a request does not say (Claude Haiku 5.5's adaptive thinking), at
    `default_effort` when its provider documents one; its rules for thinking then apply to every call.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    control: ReasoningControl
    pass_back: ReasoningPassBack = "none"
    by_default: bool = False
    default_effort: ReasoningEffort | None = None


class ModelFacts(BaseModel):
    """One entry of the catalog: a model or a family, and the facts about it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1)
    match: list[str] = Field(min_length=1)
    context_window: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    prices: CatalogPrices | None = None
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    rules: ParameterRules = Field(default_factory=ParameterRules)
    accepts: Accepts = Field(default_factory=Accepts)
    prompt_cache: PromptCache | None = None
    reasoning: ReasoningFacts | None = None
    # Where the facts were read (the provider's model card or pricing page).
    source: str | None = None

    def matches(self, model_id: str) -> bool:
        """True when one of the entry's patterns matches the (normalised) model id."""
        return any(fnmatch.fnmatchcase(model_id, pattern) for pattern in self.match)


class ModelCatalog(BaseModel):
    """The entries, tried in order."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    models: list[ModelFacts] = Field(default_factory=list)
    # The steps ask for the same model's facts several times an iteration (its window, output cap, prices),
    # and matching every entry's patterns took 0.1-0.2 ms a lookup: each id is matched once per catalog.
    _found: dict[str, ModelFacts | None] = PrivateAttr(default_factory=dict)

    def lookup(self, model_id: str) -> ModelFacts | None:
        """The first entry whose patterns match `model_id`, or None for a model the catalog does not know."""
        if model_id in self._found:
            return self._found[model_id]
        normalised = normalise_model_id(model_id)
        found = next((entry for entry in self.models if entry.matches(normalised)), None)
        if len(self._found) < _REMEMBERED_IDS:
            self._found[model_id] = found
        return found

    def extended(self, first: list[ModelFacts]) -> ModelCatalog:
        """This catalog with `first` tried before its own entries (a configuration's overrides)."""
        return ModelCatalog(models=[*first, *self.models]) if first else self


def normalise_model_id(model_id: str) -> str:
    """The id entries are matched on: lower-case, without a cross-region inference profile's prefix.

    A foundation model's or a system-defined inference profile's ARN is read as the id it ends with.
    """
    lowered = model_id.strip().lower()
    if (
        lowered.startswith("arn:")
        and ("/" in lowered)
        and (":foundation-model/" in lowered or ":inference-profile/" in lowered)
    ):
        lowered = lowered.rsplit("/", 1)[1]
    for prefix in INFERENCE_PROFILE_PREFIXES:
        if lowered.startswith(prefix):
            return lowered.removeprefix(prefix)
    return lowered


@cache
def packaged_catalog() -> ModelCatalog:
    """The catalog shipped in the package, read once per process."""
    import yaml

    try:
        raw = yaml.safe_load(CATALOG_FILE.read_text(encoding="utf-8"))
        return ModelCatalog.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{CATALOG_FILE.name}: {describe_problems(exc, top_level='<root>')}") from None
