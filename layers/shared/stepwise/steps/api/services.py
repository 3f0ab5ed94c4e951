"""The dependencies of the API's logic, built once per Lambda container and passed to every route."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from stepwise.config.settings import Settings
from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.runtime import StepRuntime, dynamodb_client

if TYPE_CHECKING:
    # The configuration is read by the first request, polls included: its secrets are redacted from every
    # answer (`redacted_answers`). The classifier and its model clients (httpx) are imported when an
    # `intent:` section asks for a classifier.
    from stepwise.config.model import StepwiseConfig
    from stepwise.intent import IntentClassifier
    from stepwise.llm.base import ChatModel

# A run still QUEUED or RUNNING this long after its deadline was lost by its execution (a machine-level
# timeout, a deleted execution): GET reports it TIMED_OUT.
LOST_RUN_GRACE_SECONDS = 15 * 60


@dataclass
class ApiServices:
    """Everything the routes need; tests build it with fakes at the wire (moto, local endpoints)."""

    runtime: StepRuntime
    executions: StepFunctionsExecutions
    idempotency: IdempotentStarts
    classifier_factory: Callable[[], IntentClassifier | None] = lambda: None
    workflow_type: Literal["STANDARD", "EXPRESS"] = "STANDARD"
    ttl_days: int = 30
    lost_run_grace_seconds: float = LOST_RUN_GRACE_SECONDS
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic

    @property
    def config(self) -> StepwiseConfig:
        """The loaded configuration."""
        return self.runtime.config

    @functools.cached_property
    def classifier(self) -> IntentClassifier | None:
        """The intent classifier the configuration describes (None without one), built on first use."""
        return self.classifier_factory()

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiServices:
        """Connect DynamoDB and Step Functions, as a container does at cold start; the configuration, the
        synchronous Step Functions client and the classifier are built by the first request that needs them."""
        runtime = StepRuntime.from_settings(settings)
        return cls(
            runtime=runtime,
            executions=StepFunctionsExecutions.from_settings(
                settings, sync_timeout_seconds=lambda: runtime.config.api.sync_timeout_seconds
            ),
            idempotency=IdempotentStarts(dynamodb_client(settings), settings.table_name),
            classifier_factory=lambda: build_intent_classifier(runtime),
            workflow_type=settings.workflow_type,
            ttl_days=settings.run_ttl_days,
        )


def _classifier_model(runtime: StepRuntime) -> ChatModel | None:
    from pydantic import TypeAdapter

    from stepwise.config.llm import BedrockModelConfig, ModelConfig, OpenAIModelConfig

    intent = runtime.config.intent
    if intent is None or intent.mode != "llm":
        return None
    if intent.model is not None:
        model_config = runtime.config.models[intent.model]
        # The question waits for its classification: the model may take no longer than the section allows.
        if isinstance(model_config, OpenAIModelConfig | BedrockModelConfig):
            timeout = min(model_config.timeout_seconds, intent.timeout_seconds)
            model_config = model_config.model_copy(update={"timeout_seconds": timeout})
    else:
        model_config = TypeAdapter(ModelConfig).validate_python(intent.llm_model_config())
    from stepwise.llm import build_chat_model

    return build_chat_model(
        model_config, config_dir=runtime.config_dir, secret_resolver=runtime.secret_resolver.resolve
    )


def build_intent_classifier(runtime: StepRuntime) -> IntentClassifier | None:
    """The classifier the `intent:` section describes, or None when the section is absent."""
    intent = runtime.config.intent
    if intent is None:
        return None
    language = runtime.config.profiles[runtime.config.default_profile].language
    from stepwise.intent import IntentClassifier

    return IntentClassifier(intent, _classifier_model(runtime), language=language)


class LazyServices:
    """Builds the services on the first request, so importing the handler stays cheap."""

    def __init__(self, factory: Callable[[], ApiServices]) -> None:
        self._factory = factory
        self._services: ApiServices | None = None
        self._lock = threading.Lock()

    def get(self) -> ApiServices:
        """The services, built on first use."""
        with self._lock:
            if self._services is None:
                self._services = self._factory()
            return self._services


def services_from_environment(environ: Mapping[str, str]) -> LazyServices:
    """The lazily built services of the API handler, configured from its environment variables."""
    settings = Settings.from_environ(environ)
    return LazyServices(lambda: ApiServices.from_settings(settings))
