"""Where a configured model is served from: the host and port its calls go to, for their spans
(`server.address`, `server.port`)."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from stepwise.config.llm import BedrockModelConfig, OpenAIModelConfig

_DEFAULT_PORTS = {"http": 80, "https": 443}


class ModelEndpoint(NamedTuple):
    """A model as its calls are recorded: its provider as configured, the model asked for, and its server
    (None where it is not known: the scripted model, a Bedrock model whose Region comes from the session)."""

    provider: str
    model: str
    address: str | None = None
    port: int | None = None


def model_server(config: object) -> tuple[str, int] | None:
    """The host and port `config`'s calls go to: an OpenAI-compatible `base_url`'s, Bedrock runtime's in the
    configured Region; None when not known before the call."""
    if isinstance(config, OpenAIModelConfig):
        split = urlsplit(config.base_url)
        if not split.hostname:
            return None
        return split.hostname, split.port or _DEFAULT_PORTS.get(split.scheme, 443)
    if isinstance(config, BedrockModelConfig) and config.region:
        return f"bedrock-runtime.{config.region}.amazonaws.com", 443
    return None
