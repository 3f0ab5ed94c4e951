"""Every secret of a configuration is known to the process's redactors once it loads the configuration.

Literals are remembered as they are; references are resolved in moto's Secrets Manager (its SSM takes
seconds to start); one that cannot be resolved at load is tried again before the next step, once the retry
interval has passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepwise.config.configured_secrets import RETRY_INTERVAL_SECONDS, configured_secrets
from stepwise.config.model import StepwiseConfig
from stepwise.config.redaction import redact_known_secrets
from stepwise.steps.runtime import LazyRuntime, StepRuntime
from stepwise.store import ConversationStore

MODEL_KEY = "sk-model-Hq4Zt8Wm1Rv6Nc3Lx9"
TOOL_KEY = "tk-api-3Jd9Qs7Pw2Ke5Yb8Vn"
LATER_VALUE = "sm-secret-6Fg2Rk9Tz4Lm7Qa1"
LATER = "stepwise/test/later"


@pytest.fixture
def secrets_manager() -> Iterator[Any]:
    """Moto's Secrets Manager (and only it)."""
    with mock_aws(config={"core": {"service_whitelist": ["secretsmanager"]}}):
        yield boto3.client("secretsmanager", region_name="us-east-1")


def config_with(**tools: Any) -> StepwiseConfig:
    model = {"provider": "openai", "base_url": "https://models.example.com/v1", "model": "m", "api_key": MODEL_KEY}
    return StepwiseConfig.from_mapping(
        {"models": {"m": model}, "profiles": {"default": {"model": "m"}}, "tools": tools}
    )


def api(key: str, url: str = "https://api.example.com") -> dict[str, Any]:
    tool = {"toolName": "get", "method": "GET", "path": "/x", "parameter": {"type": "object", "properties": {}}}
    return {"url": url, "apiKey": {"in": "header", "name": "X-Key", "value": key}, "tools": [tool]}


def runtime_for(config: StepwiseConfig, clock: list[float]) -> StepRuntime:
    # the store is never called: these tests store nothing
    store = ConversationStore(boto3.client("dynamodb", region_name="us-east-1"), "unused")
    return StepRuntime(config=config, config_dir=Path("."), store=store, clock=lambda: clock[0])


def test_every_place_a_configuration_holds_a_secret_is_listed() -> None:
    # Given a configuration with a model key, an API's key, an MCP server's key, a stdio server's env and an
    # A2A agent's key
    mcp_http = {"url": "https://mcp.example.com/mcp", "apiKey": {"in": "bearer", "value": "ssm:/mcp/token"}}
    mcp_stdio = {"command": "server", "env": {"TOKEN": "secretsmanager:gh#token", "LONG": "a-long-value", "TZ": "UTC"}}
    agent = {"url": "https://agent.example.com", "apiKey": {"in": "bearer", "value": "ssm:/agent/token"}}
    config = config_with(apis=[api(TOOL_KEY)], mcp=[mcp_http, mcp_stdio], a2a=[agent])

    # When its secrets are listed
    listed = [(secret.field, secret.value) for secret in configured_secrets(config)]

    # Then each is named by its field, the stdio server's short setting left out
    assert listed == [
        ("models.m.api_key", MODEL_KEY),
        ("tools.apis.0.apiKey.value", TOOL_KEY),
        ("tools.mcp.0.apiKey.value", "ssm:/mcp/token"),
        ("tools.a2a.0.apiKey.value", "ssm:/agent/token"),
        ("tools.mcp.1.env.TOKEN", "secretsmanager:gh#token"),
        ("tools.mcp.1.env.LONG", "a-long-value"),
    ]


def test_a_loaded_configurations_literal_secrets_are_redacted_before_any_call() -> None:
    # Given a runtime whose configuration holds a model key and a tool key, neither used yet
    runtime = runtime_for(config_with(apis=[api(TOOL_KEY)]), [0.0])
    text = f"the model said {MODEL_KEY} and {TOOL_KEY[::-1]}"

    # When it reads its configuration (as every step does before it stores anything)
    runtime.config  # noqa: B018

    # Then both keys are redacted by every redaction of the process, the store's and the logs' included
    assert redact_known_secrets(text) == "the model said *** and ***"


def test_a_reference_unresolved_at_load_is_resolved_before_a_later_step(secrets_manager: Any) -> None:
    # Given a runtime whose tool key is a secret that does not exist yet when it loads its configuration
    clock = [100.0]
    runtime = runtime_for(config_with(apis=[api(f"secretsmanager:{LATER}")]), clock)
    lazy = LazyRuntime(lambda: runtime)
    unresolved = [secret.field for secret in runtime.known_secrets()]
    secrets_manager.create_secret(Name=LATER, SecretString=LATER_VALUE)

    # When the next steps start, one within the retry interval and one after it
    lazy.get()
    within = redact_known_secrets(LATER_VALUE)
    clock[0] += RETRY_INTERVAL_SECONDS
    lazy.get()

    # Then the reference was pending, still unknown within the interval, and known once tried again
    assert unresolved == ["tools.apis.0.apiKey.value"]
    assert (within, redact_known_secrets(LATER_VALUE)) == (LATER_VALUE, "***")
    assert runtime.known_secrets() == []
