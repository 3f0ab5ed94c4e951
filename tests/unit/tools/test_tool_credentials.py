"""Secrets: resolved from SSM and Secrets Manager (moto), used by tools, and never shown to the model."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepwise.config.credentials import SecretResolver, SecretUnavailable
from stepwise.config.redaction import Redactor
from tests.support.tool_server import Echo, ScriptableToolServer, Status
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint

CANARY = "canary-7f3a9c2e-0b1d-4e5f"
REGION = "us-east-1"


@pytest.fixture
def aws() -> Iterator[None]:
    """Moto's in-process SSM and Secrets Manager, with a canary stored in each."""
    with mock_aws():
        boto3.client("ssm", region_name=REGION).put_parameter(
            Name="/stepwise/weather", Value=CANARY, Type="SecureString"
        )
        boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name="stepwise/partner", SecretString=json.dumps({"api_key": CANARY, "user": "stepwise"})
        )
        yield


def echo_api(server: ScriptableToolServer, api_key: dict[str, Any]) -> dict[str, Any]:
    return {"apis": [api_entry(server.url, [endpoint("echo", "/echo")], apiKey=api_key)]}


def test_an_ssm_key_reaches_the_server_but_not_the_observation(
    aws: None, make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API whose key is an SSM reference, and a server that echoes the request back
    invoker = make_invoker(
        echo_api(tool_server, {"in": "header", "name": "X-API-Key", "value": "ssm:/stepwise/weather"})
    )

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then the call succeeded, the server received the real key, and the observation shows it redacted
    assert observation.ok, observation.content
    assert tool_server.requests[0].headers["x-api-key"] == CANARY
    assert CANARY not in observation.content
    assert json.loads(observation.content)["headers"]["x-api-key"] == "***"


def test_a_key_echoed_in_an_error_body_is_absent_from_content_and_error(
    aws: None, make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API that answers 401 while echoing the bearer token it got from Secrets Manager
    tool_server.on("/echo", Echo(status=401))
    invoker = make_invoker(echo_api(tool_server, {"in": "bearer", "value": "secretsmanager:stepwise/partner#api_key"}))

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then the token reached the server, and neither the content nor the error holds it
    assert tool_server.requests[0].headers["authorization"] == f"Bearer {CANARY}"
    assert not observation.ok and observation.status_code == 401
    assert CANARY not in observation.content
    assert CANARY not in (observation.error or "")
    assert "Bearer ***" in observation.content


def test_a_key_sent_in_the_query_is_redacted_from_the_echo(
    aws: None, make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API whose key goes in the query string
    invoker = make_invoker(echo_api(tool_server, {"in": "query", "name": "key", "value": "ssm:/stepwise/weather"}))

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then the query carried it, and the observation does not
    assert tool_server.requests[0].query == {"key": [CANARY]}
    assert CANARY not in observation.content


def test_an_unresolvable_reference_is_an_observation_naming_the_reference(
    aws: None, make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API whose key points at a parameter that does not exist
    invoker = make_invoker(echo_api(tool_server, {"in": "header", "name": "X-Key", "value": "ssm:/stepwise/missing"}))

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then nothing was sent, and the observation names the reference
    assert tool_server.requests == []
    assert not observation.ok
    assert observation.error is not None and "ssm:/stepwise/missing could not be resolved" in observation.error


@pytest.mark.parametrize("location", ["header", "bearer", "query"])
def test_a_key_stored_with_a_final_newline_is_refused_naming_the_parameter_not_the_value(
    aws: None, make_invoker: MakeInvoker, tool_server: ScriptableToolServer, location: str
) -> None:
    # Given an API whose key is an SSM parameter stored from a file, with its final newline
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/stepwise/from-file", Value=f"{CANARY}\n", Type="SecureString"
    )
    invoker = make_invoker(echo_api(tool_server, {"in": location, "name": "X-Key", "value": "ssm:/stepwise/from-file"}))

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then nothing was sent, and the observation names the parameter and the reason, without the key
    assert tool_server.requests == []
    assert observation.error is not None
    assert "secret ssm:/stepwise/from-file holds a line break or NUL" in observation.error
    assert CANARY not in observation.error


def test_a_missing_json_key_is_reported_without_the_secret(aws: None) -> None:
    # Given a secret that is a JSON object without the requested key
    resolver = SecretResolver()

    # When the missing key is resolved
    with pytest.raises(SecretUnavailable) as raised:
        resolver.resolve("secretsmanager:stepwise/partner#password")

    # Then the message names the reference and holds no part of the secret
    assert "secretsmanager:stepwise/partner#password" in str(raised.value)
    assert CANARY not in str(raised.value)


def test_resolved_values_are_cached_for_their_max_age(aws: None) -> None:
    # Given a resolver with a five-minute cache that has resolved the parameter once
    resolver = SecretResolver(max_age_seconds=300)
    first = resolver.resolve("ssm:/stepwise/weather")

    # When the parameter is rotated and resolved again
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/stepwise/weather", Value="rotated-value-1234", Type="SecureString", Overwrite=True
    )
    second = resolver.resolve("ssm:/stepwise/weather")

    # Then the cached value is served
    assert first == second == CANARY


def test_a_zero_max_age_reads_every_time(aws: None) -> None:
    # Given a resolver that does not cache
    resolver = SecretResolver(max_age_seconds=0)
    resolver.resolve("ssm:/stepwise/weather")

    # When the parameter is rotated and resolved again
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/stepwise/weather", Value="rotated-value-1234", Type="SecureString", Overwrite=True
    )

    # Then the new value is read, and both values are known to the redactor
    assert resolver.resolve("ssm:/stepwise/weather") == "rotated-value-1234"
    assert resolver.redactor.redact(f"{CANARY} rotated-value-1234") == "*** ***"


def test_a_literal_is_used_as_is_without_touching_aws() -> None:
    # Given no AWS at all, when a literal is resolved
    resolver = SecretResolver()

    # Then it is returned, and remembered for redaction
    assert resolver.resolve("literal-key-99") == "literal-key-99"
    assert resolver.redactor.redact("key=literal-key-99") == "key=***"


def test_the_redactor_scrubs_encoded_forms_and_a_secret_cut_at_the_end() -> None:
    # Given a redactor that knows a secret with characters URLs and JSON escape
    secret = 'pa/ss+wo"rd'
    redactor = Redactor([secret])

    # When texts holding it raw, percent-encoded, JSON-escaped, or cut short at the end are redacted
    texts = [secret, "pa%2Fss%2Bwo%22rd", 'pa/ss+wo\\"rd', "tail: pa/ss+w"]

    # Then none of them shows it
    assert [redactor.redact(text, cut_at_end=True) for text in texts] == ["***", "***", "***", "tail: ***"]


def test_a_secret_too_short_to_redact_inside_text_is_accepted_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a resolver, when a literal key of six characters (a local model server's) is resolved twice
    resolver = SecretResolver()
    with caplog.at_level(logging.WARNING, logger="stepwise"):
        resolved = [resolver.resolve("llama7"), resolver.resolve("llama7")]

    # Then it is used as it is, with one warning that does not quote it
    assert resolved == ["llama7", "llama7"]
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [
        "a secret of 6 characters is too short to redact inside text (under 8); "
        "it is used, and redacted only where it is a whole value"
    ]
    # And it is replaced where it is a whole value, but text mentioning it is left whole
    assert resolver.redactor.redact("llama7") == "***"
    assert resolver.redactor.redact("I run llama7 on my laptop") == "I run llama7 on my laptop"


def test_a_key_split_by_the_response_cap_leaves_no_beginning_behind(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API whose 1000-byte cap falls ten characters into the key it echoes
    key = "literal-canary-5e6f7a8b"
    tool_server.on("/echo", Status(200, "x" * 990 + key + " and more"))
    raw = echo_api(tool_server, {"in": "header", "name": "X-Key", "value": key})
    raw["apis"][0]["maxResponseBytes"] = 1000
    invoker = make_invoker(raw)

    # When the tool is called
    observation = invoker.invoke(call("echo"))

    # Then the cut-off beginning of the key is redacted too
    assert observation.truncated
    assert "literal-ca" not in observation.content
    assert observation.content.startswith("x" * 990 + "***…[truncated")
