"""The Stepwise configuration file: models, tools, agent profiles, intent classification and routing."""

import os
import re
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stepwise.config.agents import DEFAULT_MAX_AGENT_DEPTH, MAX_AGENT_DEPTH, AgentRef, agent_graph_problem, agent_refs
from stepwise.config.context import ContextLimits, ContextSettings
from stepwise.config.history_cap import AGENT_LOOP, HISTORY_EVENT_LIMIT
from stepwise.config.language import Language
from stepwise.config.lazy_section import lazy_section
from stepwise.config.llm import BedrockModelConfig, ModelConfig, ModelPrices
from stepwise.config.reasoning import ReasoningSetting, reasoning_problem, warn_assumed_reasoning
from stepwise.config.tool_sources import ToolsConfig
from stepwise.errors import ConfigError
from stepwise.inputs.validation_problems import describe_problems
from stepwise.models.policy import PolicyMode
from stepwise.models.run import RunLimits

if TYPE_CHECKING:
    from stepwise.config.guardrails import Guardrails
    from stepwise.config.intent import IntentConfig, Route
    from stepwise.config.model_catalog import ModelCatalog, ModelFacts
    from stepwise.config.online_evals import OnlineEvals

    _Guardrails = Guardrails
    _Intent = IntentConfig
    _Route = Route
    _OnlineEvals = OnlineEvals
    _CatalogEntry = ModelFacts
else:
    # sections most files leave out: their models load with the first file that has them (lazy_section)
    _Guardrails = lazy_section("stepwise.config.guardrails", "Guardrails")
    _Intent = lazy_section("stepwise.config.intent", "IntentConfig")
    _Route = lazy_section("stepwise.config.intent", "Route")
    _OnlineEvals = lazy_section("stepwise.config.online_evals", "OnlineEvals")
    # the file's own catalog entries: the packaged catalog's validator (built by the first lookup) holds their
    # schema already, so the root's does not build it a second time
    _CatalogEntry = lazy_section("stepwise.config.model_catalog", "ModelFacts")

_ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

Strategy = Literal["function_calling", "react", "auto"]
TextProtocol = Literal["react_json", "react_text", "xml", "markers"]

TOOL_CHOICE_MODES = ("auto", "required", "none")
# OpenAI refuses a request with more tools than this; no request Stepwise builds has more.
MAX_TOOLS_PER_REQUEST = 128
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# The structured output is stored as the run's `output`, a JSON object or array.
_OUTPUT_TYPES = ("object", "array")


class ProfileLimits(RunLimits):
    """Limits of a profile: those copied into each run, plus the per-iteration ones."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_observation_chars: int = Field(default=4000, ge=200, le=200_000)
    # a tool result longer than `max_observation_chars` is kept whole apart from the model's copy, up to this
    # (0: not kept); at most what one step endpoint answer carries well within Lambda's 6 MB response
    max_stored_output_chars: int = Field(default=2_000_000, ge=0, le=2_000_000)

    @model_validator(mode="after")
    def _stores_at_least_what_the_model_reads(self) -> "ProfileLimits":
        if 0 < self.max_stored_output_chars < self.max_observation_chars:
            raise ValueError(
                f"max_stored_output_chars={self.max_stored_output_chars} is below max_observation_chars="
                f"{self.max_observation_chars}: the whole result kept must be at least what the model receives "
                "(or 0, to keep only what the model receives)"
            )
        return self

    @model_validator(mode="after")
    def _fits_the_execution_history(self) -> "ProfileLimits":
        most = AGENT_LOOP.most_iterations(self.max_parallel_calls)
        if self.max_iterations > most:
            events = AGENT_LOOP.events_per_run(self.max_iterations, self.max_parallel_calls)
            raise ValueError(
                f"max_iterations={self.max_iterations} with max_parallel_calls={self.max_parallel_calls} can write "
                f"up to {events} execution-history events, past Step Functions' {HISTORY_EVENT_LIMIT} per "
                f"execution (a run would fail without a trace of why): at most {most} iterations with "
                f"max_parallel_calls={self.max_parallel_calls}"
            )
        return self


class ToolSearch(BaseModel):
    """When a run would offer more than ``threshold`` tools, the model gets `find_tools` instead.

    It then sees `find_tools` (a keyword search over the profile's tools, ``results`` tools per search),
    the tool `tool_choice` names, if any, and the tools its searches found; a call to any tool of the
    profile still runs (see `stepwise.steps.tool_offer`).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    threshold: int = Field(default=32, ge=2, le=MAX_TOOLS_PER_REQUEST)
    results: int = Field(default=5, ge=1, le=20)

    @model_validator(mode="after")
    def _room_for_results(self) -> "ToolSearch":
        if self.results >= self.threshold:
            raise ValueError(
                f"results ({self.results}) must be below threshold ({self.threshold}): find_tools takes a place"
            )
        return self

    def room(self, client_tools: int) -> int:
        """How many of the profile's tools one request may carry beside ``client_tools`` of the client."""
        return max(0, min(self.threshold, MAX_TOOLS_PER_REQUEST) - client_tools)

    def needed(self, profile_tools: int, client_tools: int = 0) -> bool:
        """True when the profile's tools do not all fit one request: the model then gets `find_tools`."""
        return profile_tools > self.room(client_tools)


class AgentProfile(BaseModel):
    """An agent: which model, what it is told, which tools it may use, and its limits."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    model: str
    # What the agent is for, in a sentence or two: shown wherever another party picks an agent (`/v1/models`,
    # Agent Cards, MCP tools, the tool another profile delegates through).
    description: str | None = Field(default=None, min_length=1, max_length=1000)
    system_prompt: str = "You are a helpful assistant. Use the tools when they help; answer concisely."
    strategy: Strategy = "auto"
    protocol: TextProtocol | None = None
    tools: list[str] | None = None
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    response_schema: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    limits: ProfileLimits = Field(default_factory=ProfileLimits)
    language: Language = "en"
    tool_search: ToolSearch = Field(default_factory=ToolSearch)
    # Thinking: on, off, and how much (`stepwise.config.reasoning`); absent, the model's own default.
    reasoning: ReasoningSetting | None = None
    context: ContextSettings = Field(default_factory=ContextSettings)
    # The AWS Region of the profile's Bedrock models that name none (`stepwise.config.aws_region`).
    region: str | None = Field(default=None, min_length=1)
    # The tool policy: a Cedar file (relative to this file's folder) or Cedar text (`stepwise.config.tool_policy`).
    policy: str | None = Field(default=None, min_length=1)
    policy_mode: PolicyMode = "enforce"
    # Checks of the input, each tool result and the answer (`stepwise.config.guardrails`); none when absent.
    guardrails: _Guardrails | None = None
    # The profiles this one may delegate to, each offered to its model as a tool (`stepwise.config.agents`).
    agents: list[str | AgentRef] = Field(default_factory=list, max_length=32)

    @property
    def agent_refs(self) -> list[AgentRef]:
        """The profiles this one may delegate to, each written out in full."""
        return agent_refs(self.agents)

    def agent_ref(self, name: str) -> AgentRef | None:
        """The agent this profile's model calls by the tool name `name`, if it is one."""
        return next((ref for ref in self.agent_refs if ref.profile == name), None)

    # Checks applied to a sample of the profile's runs as they end (`stepwise.config.online_evals`).
    online_evals: _OnlineEvals | None = None

    @field_validator("tool_choice")
    @classmethod
    def _check_tool_choice(cls, value: str | None) -> str | None:
        if value is not None and value not in TOOL_CHOICE_MODES and not _TOOL_NAME.match(value):
            raise ValueError(f"must be one of {', '.join(TOOL_CHOICE_MODES)} or a tool name, got {value!r}")
        return value

    @field_validator("response_schema")
    @classmethod
    def _check_response_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        # only a profile with a response schema loads jsonschema
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        from stepwise.patterns.metaschema import metaschema_formats, unrunnable_pattern

        validator_class = validator_for(value)
        try:
            validator_class.check_schema(value, format_checker=metaschema_formats(validator_class))
        except SchemaError as exc:
            location = "/".join(str(part) for part in exc.absolute_path) or "<root>"
            raise ValueError(f"not a valid JSON Schema (at {location}): {exc.message}") from None
        unrunnable = unrunnable_pattern(value)
        if unrunnable is not None:
            raise ValueError(f"a pattern at {unrunnable}")
        if value.get("type") not in _OUTPUT_TYPES:
            raise ValueError('the schema\'s top-level "type" must be "object" or "array"')
        return value

    @model_validator(mode="after")
    def _check_tool_choice_names_an_allowed_tool(self) -> "AgentProfile":
        choice = self.tool_choice
        named = choice is not None and choice not in TOOL_CHOICE_MODES
        if named and self.tools is not None and choice not in self.tools:
            raise ValueError(f"tool_choice: '{choice}' is not one of the profile's tools")
        return self


class ApiLimits(BaseModel):
    """Bounds of the HTTP API."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_body_bytes: int = Field(default=262_144, ge=1024)
    max_messages: int = Field(default=50, ge=1, le=90)
    max_input_chars: int = Field(default=32_000, ge=1)
    sync_timeout_seconds: float = Field(default=25, gt=0, le=28)


class StepwiseConfig(BaseModel):
    """The whole configuration file."""

    # literal API keys may sit in the file: never echo input values in validation errors. Built at import,
    # since every function but IterationGuard validates its file on its first invocation; the sections'
    # models (`defer_build`) are part of this schema and build no validator of their own unless used alone,
    # but for the optional sections declared with `lazy_section`, validated by their own model when present.
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    models: dict[str, ModelConfig]
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    profiles: dict[str, AgentProfile]
    default_profile: str = "default"
    intent: _Intent | None = None
    routes: list[_Route] = Field(default_factory=list)
    api: ApiLimits = Field(default_factory=ApiLimits)
    # Entries tried before the packaged catalog's (stepwise/config/model_catalog.yaml).
    model_catalog: list[_CatalogEntry] = Field(default_factory=list)
    # How deep a tree of delegated runs may grow (a run started by the API is at depth 1): a call past it is
    # answered with an observation saying so, and no child starts. One figure for the whole tree, which spans
    # profiles (docs/agents.md).
    max_agent_depth: int = Field(default=DEFAULT_MAX_AGENT_DEPTH, ge=1, le=MAX_AGENT_DEPTH)

    @model_validator(mode="after")
    def _references_resolve(self) -> "StepwiseConfig":
        if self.default_profile not in self.profiles:
            raise ValueError(f"default_profile '{self.default_profile}' is not one of the profiles")
        for name, profile in self.profiles.items():
            if profile.model not in self.models:
                raise ValueError(f"profiles.{name}.model: '{profile.model}' is not one of the models")
            if profile.limits.max_cost_usd is not None and self.prices_of(profile.model) is None:
                raise ValueError(
                    f"profiles.{name}.limits.max_cost_usd: model '{profile.model}' has no prices to count the cost"
                )
            self._check_reasoning(name, profile)
            summary_model = profile.context.summary_model
            if summary_model is not None and summary_model not in self.models:
                raise ValueError(f"profiles.{name}.context.summary_model: '{summary_model}' is not one of the models")
            judge = profile.online_evals.judge if profile.online_evals is not None else None
            if judge is not None and judge not in self.models:
                raise ValueError(f"profiles.{name}.online_evals.judge: '{judge}' is not one of the models")
        self._check_agents()
        if self.intent is not None and self.intent.model is not None and self.intent.model not in self.models:
            raise ValueError(f"intent.model: '{self.intent.model}' is not one of the models")
        for index, route in enumerate(self.routes):
            if route.profile not in self.profiles:
                raise ValueError(f"routes.{index}.profile: '{route.profile}' is not one of the profiles")
        return self

    def _check_agents(self) -> None:
        """Each profile's agents are profiles, none named like one of its tools, and no profile reaches itself."""
        graph = {name: profile.agent_refs for name, profile in self.profiles.items()}
        problem = agent_graph_problem(graph, list(self.profiles))
        if problem is not None:
            raise ValueError(problem)
        for name, refs in graph.items():
            tools = self.profiles[name].tools or []
            for index, ref in enumerate(refs):
                if ref.profile in tools:
                    raise ValueError(
                        f"profiles.{name}.agents.{index}.profile: '{ref.profile}' is also one of the profile's tools"
                    )

    def _check_reasoning(self, name: str, profile: AgentProfile) -> None:
        """A profile's reasoning setting must be one its model takes (the scripted model takes any); a model
        the catalog does not describe takes it as its provider kind assumes, with one warning."""
        model = self.models[profile.model]
        if profile.reasoning is None or model.provider == "scripted":
            return
        max_tokens = profile.max_tokens if profile.max_tokens is not None else model.max_tokens
        facts = self.model_facts(profile.model)
        problem = reasoning_problem(profile.reasoning, facts, max_tokens, provider=model.provider)
        if problem is not None:
            raise ValueError(f"profiles.{name}.reasoning: model '{profile.model}': {problem}")
        warn_assumed_reasoning(profile.model, _requested_id(model), facts, model.provider)

    def profile(self, name: str) -> AgentProfile:
        """The named profile; `ConfigError` if there is none."""
        try:
            return self.profiles[name]
        except KeyError:
            raise ConfigError(f"unknown profile '{name}'") from None

    def model_for(self, model: str, profile: str | None = None) -> ModelConfig:
        """The named model's configuration as `profile` calls it: a Bedrock model that names no `region:` takes
        the profile's, if it has one (then the caller's, `stepwise.config.aws_region`)."""
        config = self.models[model]
        region = self.profiles[profile].region if profile in self.profiles else None
        if isinstance(config, BedrockModelConfig) and config.region is None and region is not None:
            return config.model_copy(update={"region": region})
        return config

    def model_prices(self, profile: str) -> ModelPrices | None:
        """The prices of the named profile's model (see `prices_of`)."""
        return self.prices_of(self.profile(profile).model)

    def prices_of(self, model: str) -> ModelPrices | None:
        """The named model's prices: its own `prices` when the configuration gives them, else the catalog's;
        None when neither knows them."""
        configured = self.models[model].prices
        if configured is not None:
            return configured
        facts = self.model_facts(model)
        if facts is None or facts.prices is None:
            return None
        prices = facts.prices
        return ModelPrices(
            input_per_million=prices.input,
            output_per_million=prices.output,
            cache_read_per_million=prices.cache_read,
            cache_write_per_million=prices.cache_write,
            reasoning_per_million=prices.reasoning,
        )

    def model_facts(self, model: str) -> "ModelFacts | None":
        """What the catalog knows of the named model (this file's entries first); None for an unknown model."""
        requested = _requested_id(self.models[model])
        if not requested:
            return None
        return self.catalog.lookup(requested)

    @cached_property
    def catalog(self) -> "ModelCatalog":
        """The packaged catalog with this file's `model_catalog:` entries tried first."""
        # the catalog loads with the first lookup: a function whose first call looks up no model never loads it
        from stepwise.config.model_catalog import packaged_catalog

        return packaged_catalog().extended(self.model_catalog)

    def context_limits(self, profile: str, *, learned_window: int | None = None) -> ContextLimits:
        """The named profile's context window, output floor, compaction threshold and budgets, resolved from
        the profile's `context:`, its model's entry and the model catalog, else the window a run learned
        from the model's server (`stepwise.steps.learned_window`)."""
        agent = self.profile(profile)
        model = self.models[agent.model]
        facts = self.model_facts(agent.model)
        summary_model = agent.context.summary_model or agent.model
        summary_facts = facts if summary_model == agent.model else self.model_facts(summary_model)
        return ContextLimits.resolve(
            agent.context,
            window=model.context_window or (facts.context_window if facts else None) or learned_window,
            max_output=model.max_output_tokens or (facts.max_output_tokens if facts else None),
            summary_model=summary_model,
            summary_window=self.models[summary_model].context_window
            or (summary_facts.context_window if summary_facts else None),
        )

    @classmethod
    def from_mapping(
        cls, raw: Any, *, source: str = "<config>", environ: Mapping[str, str] | None = None
    ) -> "StepwiseConfig":
        """Validate a parsed configuration, substituting `${env:NAME}` and `${env:NAME:-default}` first.

        Errors name the source, the field and the reason.
        """
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: the configuration must be a mapping")
        resolved = _substitute_environment(raw, os.environ if environ is None else environ, source)
        try:
            return cls.model_validate(resolved)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {describe_problems(exc, top_level='<root>')}") from None


def _substitute_environment(value: Any, environ: Mapping[str, str], source: str) -> Any:
    if isinstance(value, dict):
        return {key: _substitute_environment(item, environ, source) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute_environment(item, environ, source) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(f"{source}: environment variable {name} is not set")

    # No reference ends past the last `}`: a default left open there would be read to the end of the value
    # from each `${env:` after it (a value of them cost the square of its length).
    closed = value.rfind("}") + 1
    return _ENV_REFERENCE.sub(replace, value[:closed]) + value[closed:]


def _requested_id(model: ModelConfig) -> str:
    """The id the provider is asked for (an OpenAI-compatible `model`, a Bedrock `model_id`); "" for none."""
    return str(getattr(model, "model", None) or getattr(model, "model_id", None) or "")
