"""Before `stepwise run` starts a run: can the configured model be reached at all?

Without this check a run with no credentials spends its retries (about 20 s with Bedrock) before it fails;
the check answers in well under a second with what to configure instead.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

from stepwise.config.llm import BedrockModelConfig, OpenAIModelConfig
from stepwise.config.model import StepwiseConfig

HOW_TO_CONFIGURE = (
    "configure one: STEPWISE_DEFAULT_MODEL=openai OPENAI_BASE_URL=… OPENAI_API_KEY=… for an OpenAI-compatible "
    "endpoint, or AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID…) for Bedrock"
)
CONNECT_TIMEOUT_SECONDS = 0.5


def _bedrock_reason(name: str) -> str | None:
    import boto3  # deferred: only a Bedrock model needs it
    from botocore.exceptions import BotoCoreError

    # The SDK's own chain, as the Bedrock client will use it: environment, AWS_PROFILE, SSO, config files.
    try:
        credentials = boto3.Session().get_credentials()
    except BotoCoreError as exc:  # a profile that names an unknown profile, an SSO session that expired
        return f"no model reachable: model '{name}' is Bedrock and its AWS credentials cannot be read ({exc})"
    if credentials is None:
        return f"no model reachable: model '{name}' is Bedrock and no AWS credentials were found"
    return None


def _endpoint_reason(name: str, config: OpenAIModelConfig) -> str | None:
    url = urlsplit(str(config.base_url))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=CONNECT_TIMEOUT_SECONDS):
            return None
    except OSError as exc:
        return f"no model reachable: model '{name}' at {url.scheme}://{url.netloc} cannot be reached ({exc})"


def unreachable_model(config: StepwiseConfig) -> str | None:
    """One line saying which model of the profiles cannot be reached and how to configure one; None if all can."""
    for name in dict.fromkeys(profile.model for profile in config.profiles.values()):
        model = config.models.get(name)
        reason = None
        if isinstance(model, BedrockModelConfig):
            reason = _bedrock_reason(name)
        elif isinstance(model, OpenAIModelConfig):
            reason = _endpoint_reason(name, model)
        if reason is not None:
            return f"{reason}; {HOW_TO_CONFIGURE}"
    return None


def unreachable_model_in(config_path: Path) -> str | None:
    """`unreachable_model` of the configuration file at `config_path` (`ConfigError` if it is unusable)."""
    from stepwise.config.loading import read_config_file

    return unreachable_model(read_config_file(config_path).config)
