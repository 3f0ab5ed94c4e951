"""Every secret a configuration holds, known to the redactors from the moment the configuration is loaded.

A secret used to join a process's redactor only when that process resolved it for a call; a process that
had not (a fresh `stepwise serve`, a Parse container) stored a model's restatement of it raw. So every
process registers the configuration's secrets when it loads the configuration (`StepRuntime.config`),
before it stores or answers anything: each literal is remembered, each `ssm:` and `secretsmanager:`
reference resolved (`SecretResolver`, which remembers what it resolves).

A reference that cannot be resolved then (SSM unreachable, throttled, not yet created) is kept pending and
tried again before each later step and API request of the process (at most once every
`RETRY_INTERVAL_SECONDS`), so before the first write of any run that could see it: a run sees a secret only
once a tool or model call resolved it, which needs the same reference to resolve.

`configured_secrets` is the one list of where a configuration holds secrets: model API keys (the intent
classifier's too), the `apiKey` of HTTP APIs, OpenAPI sources, MCP servers and A2A agents, and a stdio MCP server's
`env` values that are credentials (`is_secret_env_value`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stepwise.config.credentials import SecretReference, SecretResolver, SecretUnavailable
from stepwise.config.llm import OpenAIModelConfig
from stepwise.config.secret_forms import MIN_REDACTED_LENGTH

if TYPE_CHECKING:
    from stepwise.config.model import StepwiseConfig

# Unresolved references are tried again no more often than this: a poll every 50 ms must not become an SSM
# request every 50 ms (and throttle the tool calls that need the same parameter).
RETRY_INTERVAL_SECONDS = 1.0

# The service's logger is configured on top of the standard one of this name (see `config.redaction`).
_logger = logging.getLogger("stepwise")


@dataclass(frozen=True)
class ConfiguredSecret:
    """One secret of the configuration: the field that holds it and its value as written there."""

    field: str
    value: str

    def describe(self) -> str:
        """Where the secret is configured and what it refers to; safe to log, it holds no secret."""
        return f"{self.field} ({SecretReference.parse(self.value).describe()})"


def is_secret_env_value(value: str) -> bool:
    """True when a stdio MCP server's `env` value is a credential: a reference, or a literal long enough to
    redact. A shorter literal (`TZ: UTC`) is a setting: redacting it would mangle text."""
    return SecretReference.parse(value).source != "literal" or len(value) >= MIN_REDACTED_LENGTH


def configured_secrets(config: StepwiseConfig) -> list[ConfiguredSecret]:
    """Every secret `config` holds, in configuration order, each with the field it is in."""
    secrets = [
        ConfiguredSecret(f"models.{name}.api_key", model.api_key)
        for name, model in config.models.items()
        if isinstance(model, OpenAIModelConfig) and model.api_key
    ]
    if config.intent is not None and config.intent.llm is not None and config.intent.llm.proxy_api_key is not None:
        secrets.append(ConfiguredSecret("intent.llm.proxy_api_key", config.intent.llm.proxy_api_key.get_secret_value()))
    tools = config.tools
    keys = [
        *((f"apis.{index}", source.api_key) for index, source in enumerate(tools.apis)),
        *((f"openapi.{index}", source.api_key) for index, source in enumerate(tools.openapi)),
        *((f"mcp.{index}", source.api_key) for index, source in enumerate(tools.mcp)),
        *((f"a2a.{index}", source.api_key) for index, source in enumerate(tools.a2a)),
    ]
    secrets += [ConfiguredSecret(f"tools.{where}.apiKey.value", key.value) for where, key in keys if key is not None]
    for index, server in enumerate(tools.mcp):
        secrets += [
            ConfiguredSecret(f"tools.mcp.{index}.env.{name}", value)
            for name, value in server.env.items()
            if is_secret_env_value(value)
        ]
    return [secret for secret in secrets if secret.value]


class KnownSecrets:
    """The configuration's secrets given to a resolver (so to its redactor), and those not resolved yet."""

    def __init__(
        self,
        secrets: list[ConfiguredSecret],
        resolver: SecretResolver,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._resolver = resolver
        self._clock = clock
        self._lock = threading.Lock()
        self._pending = list(secrets)
        self._tried_at: float | None = None

    @classmethod
    def register(
        cls, config: StepwiseConfig, resolver: SecretResolver, *, clock: Callable[[], float] = time.monotonic
    ) -> KnownSecrets:
        """Resolve every secret of `config` with `resolver` now; those that cannot be are kept pending."""
        known = cls(configured_secrets(config), resolver, clock=clock)
        for secret in known.resolve_pending():
            _logger.warning(
                f"secret {secret.describe()} could not be resolved when the configuration was loaded; "
                "it is tried again before each step until it is"
            )
        return known

    @property
    def pending(self) -> list[ConfiguredSecret]:
        """The secrets not resolved yet."""
        with self._lock:
            return list(self._pending)

    def resolve_pending(self) -> list[ConfiguredSecret]:
        """Try the pending secrets again (unless tried within `RETRY_INTERVAL_SECONDS`); those still pending."""
        with self._lock:
            if not self._pending:
                return []
            now = self._clock()
            if self._tried_at is not None and now - self._tried_at < RETRY_INTERVAL_SECONDS:
                return list(self._pending)
            self._tried_at = now
            still: list[ConfiguredSecret] = []
            for secret in self._pending:
                try:
                    self._resolver.resolve(secret.value)
                except SecretUnavailable:
                    still.append(secret)
            self._pending = still
            return list(still)
