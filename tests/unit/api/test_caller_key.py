"""The caller's API key comes from x-api-key or from an OpenAI client's `Authorization: Bearer`."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.steps.api.caller_key import authorize, presented_api_key

METHOD_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/chat/completions"


@pytest.mark.parametrize(
    ("headers", "key"),
    [
        pytest.param([("x-api-key", "k1")], "k1", id="x-api-key"),
        pytest.param([("Authorization", "Bearer sk-abc")], "sk-abc", id="bearer"),
        pytest.param([("authorization", "bearer  sk-abc ")], "sk-abc", id="bearer in lower case"),
        pytest.param([("Authorization", "Bearer b"), ("X-Api-Key", "a")], "a", id="x-api-key wins"),
        pytest.param([("Authorization", "AWS4-HMAC-SHA256 Credential=AKIA/...")], None, id="a signature is no key"),
        pytest.param([("Authorization", "Bearer ")], None, id="empty bearer"),
        pytest.param([], None, id="no header"),
    ],
)
def test_the_presented_key_is_read_from_either_header(headers: list[tuple[str, str]], key: str | None) -> None:
    # When the headers are read, then the key is the one presented
    assert presented_api_key(headers) == key


def test_the_authorizer_hands_a_bearer_token_to_the_usage_plan() -> None:
    # Given a request event as API Gateway sends a REQUEST authorizer
    event: dict[str, Any] = {"methodArn": METHOD_ARN, "headers": {"Authorization": "Bearer sk-abc"}}
    # When it is authorized
    answer = authorize(event)
    # Then the method is allowed with the token as the usage-plan key, which API Gateway then checks
    assert answer["usageIdentifierKey"] == "sk-abc"
    assert answer["policyDocument"]["Statement"] == [
        {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": METHOD_ARN}
    ]


def test_the_authorizer_denies_a_request_without_a_key() -> None:
    # When a request with no key is authorized
    answer = authorize({"methodArn": METHOD_ARN, "headers": {"Accept": "application/json"}})
    # Then it is denied and names no key
    assert answer["policyDocument"]["Statement"][0]["Effect"] == "Deny"
    assert "usageIdentifierKey" not in answer
