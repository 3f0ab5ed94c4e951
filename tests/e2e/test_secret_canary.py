"""A canary secret in SSM, used as an imported API's key: it reaches the API and nothing else.

The run goes through the real state machine and handlers. The key is sent as a query parameter — the
placement most likely to leak, since HTTP clients log request URLs — and the API echoes it back, once in
a success and once in an error. Afterwards every stored item, every state event, everything written to
stdout and stderr and every log record at INFO (the service's own logger at DEBUG) is searched for the
secret and for its URL-encoded forms.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import boto3
import pytest
import yaml
from moto import mock_aws

from stepwise.config.settings import Settings
from stepwise.steps.runtime import dynamodb_client
from tests.e2e.conftest import scripted_model
from tests.support.tool_server import Echo, ScriptableToolServer

# '/', '+' and '=' make the encoded forms differ from the secret, so each is searched for separately.
CANARY = "canary/7f3a+9c2e=0b1d4e5f"
CANARY_FORMS = (CANARY, quote(CANARY, safe=""), quote_plus(CANARY))
PARAMETER = "/stepwise/canary/weather-key"
WEATHER_DOCUMENT = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "weather-3.1.yaml"


@pytest.fixture
def ssm_canary() -> Iterator[None]:
    """Moto's SSM (and only SSM) holding the canary as a SecureString."""
    with mock_aws(config={"core": {"service_whitelist": ["ssm"]}}):
        boto3.client("ssm", region_name="us-east-1").put_parameter(Name=PARAMETER, Value=CANARY, Type="SecureString")
        yield


def scan_table(table_name: str) -> list[dict[str, Any]]:
    """Every item of the run's table, read through the local environment's endpoint."""
    client = dynamodb_client(Settings.from_environ(os.environ))
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table_name):
        items.extend(page["Items"])
    return items


def test_a_canary_api_key_from_ssm_appears_nowhere_but_in_the_request_to_its_api(
    ssm_canary: None,
    verbose_logs: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    local_run: Callable[..., Any],
) -> None:
    with ScriptableToolServer(default=Echo()) as weather_api:
        # Given an imported API whose query key is the canary, and that echoes every request back
        weather_api.on("/v3/places/", Echo(status=401))
        shutil.copy(WEATHER_DOCUMENT, tmp_path)
        key = {"in": "query", "name": "key", "value": f"ssm:{PARAMETER}"}
        source = {"source": "weather-3.1.yaml", "baseUrl": f"{weather_api.url}/v3", "internal": True, "apiKey": key}
        calls = [
            {"name": "get_weather_now", "arguments": {"location": "Paris", "language": "en", "unit": "c"}},
            {"name": "placeDetails", "arguments": {"place-id": "louvre"}},
        ]
        model = scripted_model({"tool_calls": calls}, {"content": "It drizzles in Paris."}, native_tools=True)
        profiles = {"default": {"model": "m", "strategy": "function_calling"}}
        config = {"models": {"m": model}, "tools": {"openapi": [source]}, "profiles": profiles}
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        environment, listener = local_run(tmp_path)

        # When the run uses the API twice
        meta, execution = environment.ask("Weather in Paris, and is the Louvre open?")

        # Then the API received the secret itself, on both calls
        assert [request.query["key"] for request in weather_api.requests] == [[CANARY], [CANARY]]
        stored_items = scan_table(environment.table_name)
    assert execution.status == "SUCCEEDED"
    messages = environment.runtime.store.list_messages(meta.run_id)
    steps = environment.runtime.store.list_steps(meta.run_id)
    observations = [message.content for message in messages if message.role == "tool"]
    errors = [step.error for step in steps if step.error]
    captured = capfd.readouterr()
    traces = {
        "stored items": json.dumps(stored_items),
        "observations": json.dumps(observations),
        "errors": json.dumps(errors),
        "run": meta.model_dump_json(),
        "state events": json.dumps([event.model_dump(mode="json") for event in listener.events]),
        "stdout": captured.out,
        "stderr": captured.err,
        "log records": verbose_logs.text,
    }
    # And the echoed key shows up redacted in both observations, the error one included
    assert all("***" in observation for observation in observations)
    assert errors == ["HTTP 401 Unauthorized"]
    # And the logs did record the requests (so searching them means something)...
    assert "HTTP Request: GET" in verbose_logs.text
    # ...but the secret is in none of what the run produced, in any form
    leaks = [(where, form) for where, text in traces.items() for form in CANARY_FORMS if form in text]
    assert leaks == []
