"""Build the chat model a configuration describes."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepwise.config.llm import (
    BedrockModelConfig,
    ModelConfig,
    OpenAIModelConfig,
    ScriptedModelConfig,
)
from stepwise.llm.base import ChatModel

if TYPE_CHECKING:
    # each provider loads with the first model of its kind built: a Bedrock model (the default configuration's)
    # loads neither httpx nor the OpenAI-compatible or scripted provider
    import httpx

    from stepwise.config.model_catalog import ModelFacts
    from stepwise.llm.scripted import ScriptedChatModel

# Bedrock's connection setup is quick or broken; the configured timeout is for the model's answer.
_BEDROCK_CONNECT_TIMEOUT_SECONDS = 10.0


def _unchanged(value: str) -> str:
    return value


def build_chat_model(
    config: ModelConfig,
    *,
    config_dir: Path,
    http_client: httpx.Client | None = None,
    bedrock_client: Any | None = None,
    secret_resolver: Callable[[str], str] = _unchanged,
    facts: ModelFacts | None = None,
) -> ChatModel:
    """Return the provider for `config`.

    `config_dir` anchors a scripted model's relative `script` path. `http_client` is shared by
    OpenAI-compatible models when given. `bedrock_client` is a boto3 `bedrock-runtime` client; without
    one, a client is built with the configured region and timeouts (boto3 is imported only then, to
    keep cold starts short). The API key goes through `secret_resolver` first, so it may be a secret
    reference. `facts` is the model catalog's entry for the model (parameter rules, prompt caching).
    """
    if isinstance(config, OpenAIModelConfig):
        if config.api_key:
            config = config.model_copy(update={"api_key": secret_resolver(config.api_key)})
        from stepwise.llm.openai_compatible import OpenAICompatibleChatModel

        return OpenAICompatibleChatModel(config, http_client=http_client, facts=facts)
    if isinstance(config, BedrockModelConfig):
        from stepwise.llm.bedrock import BedrockConverseChatModel

        if bedrock_client is not None:
            return BedrockConverseChatModel(config, client=bedrock_client, facts=facts)
        bedrock_config = config

        @cache
        def client_with_timeout(seconds: float) -> Any:
            return _bedrock_client(bedrock_config, seconds)

        return BedrockConverseChatModel(
            config, client=_bedrock_client(config), facts=facts, client_with_timeout=client_with_timeout
        )
    return _scripted_model(config, config_dir)


def _scripted_model(config: ScriptedModelConfig, config_dir: Path) -> ScriptedChatModel:
    from stepwise.llm.scripted import ScriptedChatModel

    if config.script is not None:
        return ScriptedChatModel.from_file(config_dir / config.script)
    return ScriptedChatModel(config.scenarios or [])


def _bedrock_client(config: BedrockModelConfig, timeout_seconds: float | None = None) -> Any:
    """A `bedrock-runtime` client of the caller's AWS identity (the SDK's credential chain) in the model's
    Region (`stepwise.config.aws_region`: `NoRegion`, one line naming the fix, when nothing sets one)."""
    import os

    import boto3
    from botocore.config import Config

    from stepwise.config.aws_region import bedrock_region

    region = bedrock_region(config.model_id, config.region, environ=os.environ)

    timeout = config.timeout_seconds if timeout_seconds is None else timeout_seconds
    # One attempt: the state machine retries LLMTransientError with backoff, SDK retries would stack.
    client_config = Config(
        read_timeout=timeout,
        connect_timeout=min(_BEDROCK_CONNECT_TIMEOUT_SECONDS, timeout),
        retries={"mode": "standard", "total_max_attempts": 1},
    )
    # A session of its own reads the caller's identity as it is now (environment, AWS_PROFILE, SSO, files),
    # not as boto3's process-wide default session first found it.
    return boto3.session.Session().client("bedrock-runtime", region_name=region, config=client_config)
