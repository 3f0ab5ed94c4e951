"""Who the caller is, and how a run is named in a URL."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.steps.api.errors import InvalidRequest, Unauthorized
from stepwise.steps.api.ownership import parse_run_reference, request_owner

RUN_ID = "0123456789abcdef0123456789abcdef"


def event(identity: dict[str, Any] | None) -> APIGatewayProxyEvent:
    context: dict[str, Any] = {} if identity is None else {"identity": identity}
    return APIGatewayProxyEvent({"requestContext": context, "headers": {}, "path": "/v1/runs"})


@pytest.mark.parametrize(
    ("identity", "owner"),
    [
        pytest.param({"apiKeyId": "key-1", "apiKey": "secret"}, "key-1", id="API key"),
        pytest.param(
            {"apiKeyId": None, "userArn": "arn:aws:iam::1:user/ada", "caller": "AIDA"},
            "arn:aws:iam::1:user/ada",
            id="IAM user",
        ),
        pytest.param({"caller": "AROA:session"}, "AROA:session", id="IAM caller"),
    ],
)
def test_the_owner_is_the_api_key_id_or_the_iam_principal(identity: dict[str, Any], owner: str) -> None:
    # When the caller of a request is asked for, then it is the identity API Gateway filled in
    assert request_owner(event(identity)) == owner


@pytest.mark.parametrize("identity", [None, {}, {"apiKeyId": None, "sourceIp": "1.2.3.4"}])
def test_a_request_with_no_identity_is_unauthorized(identity: dict[str, Any] | None) -> None:
    # When a request carries no identity, then it is refused
    with pytest.raises(Unauthorized):
        request_owner(event(identity))


@pytest.mark.parametrize(
    "reference",
    [
        RUN_ID,
        f"arn:aws:states:us-east-1:123456789012:execution:AgentStateMachine:{RUN_ID}",
        f"arn%3Aaws%3Astates%3Aus-east-1%3A123456789012%3Aexecution%3AAgentStateMachine%3A{RUN_ID}",
    ],
)
def test_a_run_is_named_by_its_id_or_its_execution_arn(reference: str) -> None:
    # When the reference is read, then it names the run
    assert parse_run_reference(reference) == RUN_ID


@pytest.mark.parametrize("reference", ["", "a b", "run$1", "x" * 81, "arn:aws:states:us-east-1:1:execution:M:"])
def test_anything_else_is_an_invalid_run_id(reference: str) -> None:
    # When a malformed reference is read, then it is refused naming the path parameter
    with pytest.raises(InvalidRequest) as refused:
        parse_run_reference(reference)
    assert refused.value.details["errors"][0]["field"] == "run_id (path parameter)"
