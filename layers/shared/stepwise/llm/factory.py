"""Build the chat model a configuration describes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from stepwise.config.llm import (
    BedrockModelConfig,
    ModelConfig,
    OpenAIModelConfig,
    ScriptedModelConfig,
)
from stepwise.llm.base import ChatModel
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
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
) -> ChatModel:
    """Return the provider for `config`.

    `config_dir` anchors a scripted model's relative `script` path. `http_client` is shared by
    OpenAI-compatible models when given. `bedrock_client` is a boto3 `bedrock-runtime` client; without
    one, a client is built with the configured region and timeouts (boto3 is imported only then, to
    keep cold starts short). The API key goes through `secret_resolver` first, so it may be a secret
    reference.
    """
    if isinstance(config, OpenAIModelConfig):
        if config.api_key:
            config = config.model_copy(update={"api_key": secret_resolver(config.api_key)})
        return OpenAICompatibleChatModel(config, http_client=http_client)
    if isinstance(config, BedrockModelConfig):
        from stepwise.llm.bedrock import BedrockConverseChatModel

        client = bedrock_client if bedrock_client is not None else _bedrock_client(config)
        return BedrockConverseChatModel(config, client=client)
    return _scripted_model(config, config_dir)


def _scripted_model(config: ScriptedModelConfig, config_dir: Path) -> ScriptedChatModel:
    if config.script is not None:
        return ScriptedChatModel.from_file(config_dir / config.script)
    return ScriptedChatModel(config.scenarios or [])


def _bedrock_client(config: BedrockModelConfig) -> Any:
    import boto3
    from botocore.config import Config

    # One attempt: the state machine retries LLMTransientError with backoff, SDK retries would stack.
    client_config = Config(
        read_timeout=config.timeout_seconds,
        connect_timeout=min(_BEDROCK_CONNECT_TIMEOUT_SECONDS, config.timeout_seconds),
        retries={"mode": "standard", "total_max_attempts": 1},
    )
    return boto3.client("bedrock-runtime", region_name=config.region, config=client_config)
