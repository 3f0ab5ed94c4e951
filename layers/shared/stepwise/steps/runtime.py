"""The dependencies of the state steps, built once per Lambda container and passed to every step."""

from __future__ import annotations

import functools
import importlib
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepwise.config.settings import Settings
from stepwise.steps.user_agent import fixed_user_agent
from stepwise.store import ConversationStore

if TYPE_CHECKING:
    # The configuration (PyYAML and its models) is read on first use: IterationGuard never needs it.
    # Providers (httpx), tools (httpx, jsonschema) and credentials (Powertools parameters) are imported
    # where they are first used, so a handler that needs none of them (IterationGuard) never loads them.
    from stepwise.config.configured_secrets import ConfiguredSecret, KnownSecrets
    from stepwise.config.credentials import SecretResolver
    from stepwise.config.model import AgentProfile, StepwiseConfig
    from stepwise.governance.tool_policy import ToolPolicy
    from stepwise.llm.base import ChatModel
    from stepwise.llm.endpoints import ModelEndpoint
    from stepwise.steps.executions import StepFunctionsExecutions
    from stepwise.telemetry.span_types import GenAiSpans
    from stepwise.tools import ToolRegistry
    from stepwise.tools.find_tools import FindTools


# Connections the DynamoDB client keeps open. A Lambda invocation uses one at a time, but locally one handler
# instance serves every execution thread of the engine (and a Map's items); botocore's default of 10 would
# make the 11th concurrent request open a new connection and throw it away after one use.
DYNAMODB_MAX_POOL_CONNECTIONS = 64


@functools.cache
def _data_loader() -> Any:
    """The process's one botocore data loader, which caches the service model and endpoint files it parses.

    A local command builds a client per handler it runs (as each Lambda container does), and each new
    session parsed those files again: 40 ms of CPU per client, before a warm `stepwise run`'s first step
    (bench/first_step.py). The files never change while the process runs; the configuration and credentials
    stay each session's own.
    """
    from botocore.loaders import create_loader

    return create_loader()


def dynamodb_client(settings: Settings) -> Any:
    """A DynamoDB client for the configured endpoint (AWS, DynamoDB Local, or the embedded one)."""
    import botocore.session
    from botocore import UNSIGNED
    from botocore.config import Config

    from stepwise.store.response_parser import DynamoDBParserFactory

    config = Config(
        max_pool_connections=DYNAMODB_MAX_POOL_CONNECTIONS,
        user_agent=fixed_user_agent(),
        # The store builds every request from models pydantic has checked; botocore's second check of each
        # request cost 5% of that CPU. A malformed one is still refused, by DynamoDB (ValidationException).
        parameter_validation=False,
        # Locally the client's identity is the placeholder, which no service would accept, and the loopback
        # engines (DynamoDB Local, moto) read a request's key id and Region but never check its signature:
        # signing was 12% of a Lambda worker's CPU in a `stepwise serve` burst (docs/performance.md).
        **({"signature_version": UNSIGNED} if settings.local_endpoints else {}),
    )
    # A session of its own: boto3's process-wide default session keeps the AWS configuration it first read.
    # botocore's own: boto3 adds nothing to a DynamoDB client (only to its resources), and would add its data
    # folder to the shared loader's search path again for every session.
    session = botocore.session.Session()
    session.register_component("data_loader", _data_loader())
    # attribute values parsed without botocore's walk over their shape (docs/performance.md, item 11)
    session.register_component("response_parser_factory", DynamoDBParserFactory())
    identity = settings.emulated_service_identity()
    client = session.create_client(
        "dynamodb",
        endpoint_url=settings.dynamodb_endpoint_url,
        config=config,
        region_name=identity.region_name,
        aws_access_key_id=identity.aws_access_key_id,
        aws_secret_access_key=identity.aws_secret_access_key,
    )
    if settings.local_endpoints:
        authorization = _placeholder_authorization(identity.aws_access_key_id or "", identity.region_name)
        client.meta.events.register("before-sign.dynamodb", functools.partial(_authorize, authorization))
    return client


def _placeholder_authorization(key_id: str, region: str) -> str:
    """A SigV4 `Authorization` header naming `key_id` and `region`, its signature left out: what DynamoDB
    Local needs to see (it refuses a request without one, and reads only the key id and Region from it)."""
    scope = f"{key_id}/20000101/{region}/dynamodb/aws4_request"
    return f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host;x-amz-date, Signature={'0' * 64}"


def _authorize(authorization: str, request: Any, **_: Any) -> None:
    request.headers["Authorization"] = authorization


class StepRuntime:
    """Configuration, store, models and tools of one container; models and tools are built on first use."""

    def __init__(
        self,
        *,
        config: StepwiseConfig | Callable[[], StepwiseConfig],
        config_dir: Path,
        store: ConversationStore,
        chat_models: Mapping[str, ChatModel] | None = None,
        secret_resolver: SecretResolver | None = None,
        http_client: Any = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        spans: GenAiSpans | None = None,
        guardrail_client: Any = None,
        executions: Callable[[], StepFunctionsExecutions] | None = None,
    ) -> None:
        self._config = config
        # Step Functions, for child runs (start one, answer a parent's wait): built on first use, as most
        # containers never delegate
        self._executions_factory = executions
        self._executions: StepFunctionsExecutions | None = None
        self._config_lock = threading.Lock()
        self._loaded: StepwiseConfig | None = None
        self._known_secrets: KnownSecrets | None = None
        self.config_dir = config_dir
        self.store = store
        self.clock = clock
        # A step's own waits (a model retry near the run's deadline) go through it, so tests need not wait.
        self.sleep = sleep
        self._secret_resolver = secret_resolver
        # its own lock: reading the configuration needs the resolver, and `chat_model` reads the configuration
        # while it holds `_lock`
        self._resolver_lock = threading.Lock()
        self._http_client = http_client
        self._chat_models: dict[str, ChatModel] = dict(chat_models or {})
        # models given by the caller (tests) serve every profile, whatever Region it names
        self._given_models = frozenset(self._chat_models)
        self._tools: ToolRegistry | None = None
        self._finders: dict[tuple[str, bool], FindTools] = {}
        self._policies: dict[str, ToolPolicy | None] = {}
        self._lock = threading.Lock()
        self._spans = spans
        # a bedrock-runtime client given by the caller (tests) serves every Region's guardrails
        self._guardrail_clients: dict[str | None, Any] = {}
        self._given_guardrail_client = guardrail_client

    @classmethod
    def from_settings(cls, settings: Settings) -> StepRuntime:
        """Connect the store, as a Lambda container does at cold start; the configuration file is read
        when a step first needs it."""

        def load() -> StepwiseConfig:
            from stepwise.config.loading import read_config_file

            config = read_config_file(settings.config_path).config
            variant = settings.profile_variant
            return config if variant is None else variant.applied_to(config)

        from stepwise.telemetry.spans import spans_for

        def executions() -> StepFunctionsExecutions:
            from stepwise.errors import ConfigError
            from stepwise.steps.executions import StepFunctionsExecutions

            if settings.local_endpoints and settings.stepfunctions_endpoint_url is None:
                raise ConfigError(
                    "delegating to an agent needs a Step Functions endpoint: run it under `stepwise serve`"
                )
            # the machine's ARN is not given to the step functions (the template would be circular): a child
            # run is started on the machine of its parent's execution
            return StepFunctionsExecutions.from_settings(settings, sync_timeout_seconds=1)

        store = ConversationStore(dynamodb_client(settings), settings.table_name)
        return cls(
            config=load,
            config_dir=settings.config_dir,
            store=store,
            spans=spans_for(settings.otel),
            executions=executions,
        )

    @property
    def executions(self) -> StepFunctionsExecutions:
        """Step Functions' executions and task tokens (child runs); `ConfigError` when none is reachable."""
        if self._executions is None:
            if self._executions_factory is None:
                from stepwise.errors import ConfigError

                raise ConfigError("no Step Functions client: child runs cannot be started or answered here")
            self._executions = self._executions_factory()
        return self._executions

    @property
    def spans(self) -> GenAiSpans:
        """The GenAI spans of model and tool calls (none unless enabled)."""
        if self._spans is None:
            from stepwise.telemetry.spans import NoSpans

            self._spans = NoSpans()
        return self._spans

    @property
    def config(self) -> StepwiseConfig:
        """The configuration, read on first use (or as given); its secrets are registered with the redactors
        then, before anything of it is used (`stepwise.config.configured_secrets`)."""
        loaded = self._loaded
        return loaded if loaded is not None else self._load_config()

    def _load_config(self) -> StepwiseConfig:
        resolver = self.secret_resolver
        with self._config_lock:
            if self._loaded is None:
                config = self._config() if callable(self._config) else self._config
                from stepwise.config.configured_secrets import KnownSecrets

                self._known_secrets = KnownSecrets.register(config, resolver, clock=self.clock)
                # published last: a thread that sees the configuration knows its secrets are registered
                self._loaded = config
            return self._loaded

    def known_secrets(self) -> list[ConfiguredSecret]:
        """Load the configuration (registering its secrets) if it is not yet, and try again the secrets that
        could not be resolved then; returns those still unresolved. Called before each step and API answer."""
        self.config  # noqa: B018
        assert self._known_secrets is not None  # set by the first read of the configuration
        return self._known_secrets.resolve_pending()

    def retry_unresolved_secrets(self) -> None:
        """Try again the configuration's secrets that could not be resolved, if the configuration was loaded
        (a step that never reads it, IterationGuard, stores no text and needs none)."""
        if self._known_secrets is not None:
            self._known_secrets.resolve_pending()

    @property
    def secret_resolver(self) -> SecretResolver:
        """Resolves `ssm:` and `secretsmanager:` references and remembers the secrets to redact."""
        with self._resolver_lock:
            if self._secret_resolver is None:
                from stepwise.config.credentials import SecretResolver

                self._secret_resolver = SecretResolver()
            return self._secret_resolver

    def profile(self, name: str) -> AgentProfile:
        """The named agent profile."""
        return self.config.profile(name)

    def model_identity(self, name: str) -> tuple[str, str]:
        """The named model's provider (`openai`, `bedrock`, `scripted`) and the model its provider is asked for."""
        config = self.config.models[name]
        requested = getattr(config, "model", None) or getattr(config, "model_id", None) or name
        return config.provider, str(requested)

    def model_endpoint(self, name: str, *, profile: str | None = None) -> ModelEndpoint:
        """The named model as its calls' spans name it: provider, model asked for, and server where known."""
        from stepwise.llm.endpoints import ModelEndpoint, model_server

        provider, requested = self.model_identity(name)
        server = model_server(self.config.model_for(name, profile))
        return ModelEndpoint(provider, requested, *(server or ()))

    def chat_model(self, name: str, *, profile: str | None = None) -> ChatModel:
        """The named model as `profile` calls it (a Bedrock model takes the profile's Region when it names
        none), built once per Region; a usage its provider could not count comes back estimated
        (`stepwise.steps.usage_estimate`), so every step can count what a call spent."""
        from stepwise.steps.usage_estimate import EstimatedUsage

        resolver = self.secret_resolver
        with self._lock:
            config = self.config.model_for(name, profile)
            region = getattr(config, "region", None)
            key = name if region is None or name in self._given_models else f"{name}@{region}"
            if key not in self._chat_models:
                from stepwise.llm import build_chat_model

                self._chat_models[key] = build_chat_model(
                    config,
                    config_dir=self.config_dir,
                    http_client=self._http_client,
                    secret_resolver=resolver.resolve,
                    facts=self.config.model_facts(name),
                )
            return EstimatedUsage(self._chat_models[key])

    def guardrail_client(self, region: str | None) -> Any:
        """The bedrock-runtime client that applies Bedrock guardrails in `region` (None: the caller's), built
        once per Region."""
        if self._given_guardrail_client is not None:
            return self._given_guardrail_client
        with self._lock:
            if region not in self._guardrail_clients:
                from stepwise.guardrails.bedrock import bedrock_client

                self._guardrail_clients[region] = bedrock_client(region)
            return self._guardrail_clients[region]

    def tools(self) -> ToolRegistry:
        """Every configured tool, built once (OpenAPI documents and MCP listings are read here)."""
        resolver = self.secret_resolver
        with self._lock:
            if self._tools is None:
                from stepwise.tools import build_tool_registry

                self._tools = build_tool_registry(
                    self.config.tools,
                    config_dir=self.config_dir,
                    secret_resolver=resolver,
                )
            return self._tools

    def tool_policy(self, profile: str) -> ToolPolicy | None:
        """The named profile's tool policy, parsed once; None without one (Cedar is then never imported)."""
        agent = self.profile(profile)
        with self._lock:
            if profile not in self._policies:
                from stepwise.config.tool_policy import load_policy

                self._policies[profile] = load_policy(profile, agent, self.config_dir)
            return self._policies[profile]

    def tool_finder(self, profile: str, *, searching: bool = True) -> FindTools:
        """The named profile's `find_tools`, indexed once: a search over its tools when ``searching``, and
        the full schemas of those of its tools offered reduced."""
        names = self.profile(profile).tools
        registry = self.tools()
        specs = registry.specs(names, full=True)
        with self._lock:
            if (profile, searching) not in self._finders:
                from stepwise.tools.find_tools import FindTools, ToolIndex

                self._finders[(profile, searching)] = FindTools(
                    ToolIndex(specs),
                    self.profile(profile).tool_search.results,
                    searching=searching,
                    full_specs=registry.full_specs(names),
                )
            return self._finders[(profile, searching)]


class LazyRuntime:
    """Builds the runtime on the first invocation, so importing a handler stays cheap."""

    def __init__(self, factory: Callable[[], StepRuntime]) -> None:
        self._factory = factory
        self._runtime: StepRuntime | None = None
        self._lock = threading.Lock()

    def get(self) -> StepRuntime:
        """The runtime, built on first use; the configuration's secrets not resolved yet are tried again, so
        no step writes what a secret it could not know yet might be in."""
        with self._lock:
            if self._runtime is None:
                self._runtime = self._factory()
            runtime = self._runtime
        runtime.retry_unresolved_secrets()
        return runtime


def runtime_from_environment(environ: Mapping[str, str], *, reads_configuration: bool) -> LazyRuntime:
    """The lazily built runtime of a state handler, configured from its environment variables.

    `reads_configuration`: the handler's first call reads the configuration file, so the configuration's
    models (the root's validator, which holds every section's schema) are built now, in the container's
    init, rather than inside that call. A handler whose first call does not read it (IterationGuard,
    ExecutionEnded for an ended run) leaves them to the call that does.
    """
    if reads_configuration:
        importlib.import_module("stepwise.config.model")
    settings = Settings.from_environ(environ)
    return LazyRuntime(lambda: StepRuntime.from_settings(settings))
