"""`stepwise serve` refuses bad input with a clear 4xx in the error shape, and stores nothing for it.

The server has a table of its own here, so "nothing stored" is checked as "the table is still empty".
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve

MAX_BODY_BYTES = 2048
MAX_MESSAGES = 3
CONFIG = {
    "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "unused"}]}]}},
    "profiles": {"default": {"model": "m", "strategy": "react"}},
    "api": {"max_body_bytes": MAX_BODY_BYTES, "max_messages": MAX_MESSAGES, "max_input_chars": 1000},
}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(CONFIG, tmp_path_factory.mktemp("rejections")) as served:
        yield served


def items_in_table(api: LocalApi) -> int:
    client = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"], region_name="us-east-1")
    count: int = client.scan(TableName=api.environment.table_name, Select="COUNT")["Count"]
    return count


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


BAD_REQUESTS = [
    pytest.param("POST", "/v1/runs", b'{"input": "hi"', JSON, 400, "invalid_json", id="invalid JSON"),
    pytest.param("POST", "/v1/runs", {"input": 42}, JSON, 422, "invalid_request", id="wrong type"),
    pytest.param(
        "POST", "/v1/runs", {"input": "hi", "temperature": 1}, JSON, 422, "invalid_request", id="unknown field"
    ),
    pytest.param("POST", "/v1/runs", {"input": "   "}, JSON, 422, "invalid_request", id="empty input"),
    pytest.param("POST", "/v1/runs", {}, JSON, 422, "invalid_request", id="no question"),
    pytest.param("POST", "/v1/runs", {"messages": []}, JSON, 422, "invalid_request", id="no messages"),
    pytest.param(
        "POST", "/v1/runs", {"input": "x" * MAX_BODY_BYTES}, JSON, 413, "payload_too_large", id="oversized body"
    ),
    pytest.param(
        "POST",
        "/v1/runs",
        {"messages": [user(f"message {n}") for n in range(MAX_MESSAGES + 1)]},
        JSON,
        422,
        "invalid_request",
        id="too many messages",
    ),
    pytest.param("POST", "/v1/runs", {"input": "hi", "profile": "nope"}, JSON, 422, "invalid_request", id="profile"),
    pytest.param(
        "POST", "/v1/runs", b"input=hi", {"Content-Type": "text/plain"}, 415, "unsupported_media_type", id="not JSON"
    ),
    pytest.param(
        "POST",
        "/v1/runs",
        {"input": "hi"},
        {**JSON, "Idempotency-Key": "has spaces in it"},
        422,
        "invalid_request",
        id="malformed idempotency key",
    ),
    pytest.param(
        "POST",
        "/v1/runs",
        {"input": "hi"},
        {**JSON, "x-api-key": "k" * 5_000},
        400,
        "invalid_identity",
        id="x-api-key of 5,000 characters",
    ),
    pytest.param(
        "GET", "/v1/models", None, {"x-api-key": "a key with spaces"}, 400, "invalid_identity", id="key with spaces"
    ),
    pytest.param(
        "POST",
        "/v1/chat/completions",
        {"model": "default", "messages": [user("hi")], "n": 2},
        JSON,
        422,
        "invalid_request",
        id="two choices",
    ),
    pytest.param(
        "POST",
        "/v1/chat/completions",
        {"model": "default", "messages": [user("hi"), {"role": "assistant", "content": "hello"}]},
        JSON,
        422,
        "invalid_request",
        id="no question last",
    ),
    pytest.param("GET", "/v1/runs/not$a-run-id", None, {}, 422, "invalid_request", id="malformed run id"),
    pytest.param("GET", "/v1/runs/0123456789abcdef", None, {}, 404, "not_found", id="unknown run id"),
    pytest.param("GET", "/v1/runs/abc?trace=maybe", None, {}, 422, "invalid_request", id="bad query parameter"),
    pytest.param("GET", "/v1/nothing-here", None, {}, 404, "not_found", id="no such route"),
    pytest.param("DELETE", "/v1/runs", None, {}, 405, "method_not_allowed", id="a method no route has"),
    pytest.param("POST", "/v1/models", None, JSON, 405, "method_not_allowed", id="a method the path does not take"),
]


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "error_type"), BAD_REQUESTS)
def test_bad_input_is_a_4xx_with_the_error_shape_and_stores_nothing(
    api: LocalApi, method: str, path: str, body: Any, headers: dict[str, str], status: int, error_type: str
) -> None:
    # Given a caller with an API key
    content = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    # When the bad request is sent
    response = httpx.request(method, api.url + path, content=content, headers={"x-api-key": "k", **headers}, timeout=10)
    # Then it is refused with the status and the error shape, and the table is still empty
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (status, error_type)
    assert isinstance(error["message"], str) and error["message"] and isinstance(error["details"], dict)
    assert items_in_table(api) == 0


def test_a_validation_error_names_every_field_at_fault(api: LocalApi) -> None:
    # When a body with two wrong fields is posted
    response = httpx.post(
        api.url + "/v1/runs", json={"input": 1, "session_id": "a b"}, headers={"x-api-key": "k"}, timeout=10
    )
    # Then each field is named with its reason
    fields = {error["field"] for error in response.json()["error"]["details"]["errors"]}
    assert (response.status_code, fields) == (422, {"input", "session_id"})


def test_a_request_without_an_api_key_is_unauthorized(api: LocalApi) -> None:
    # When a question is posted without the x-api-key header
    response = httpx.post(api.url + "/v1/runs", json={"input": "hi"}, timeout=10)
    # Then it is 401, and nothing is stored
    assert (response.status_code, response.json()["error"]["type"]) == (401, "unauthorized")
    assert items_in_table(api) == 0


def test_a_key_too_long_to_be_an_owner_is_refused_naming_the_header(api: LocalApi) -> None:
    # When a question is posted with an x-api-key of 5,000 characters
    response = httpx.post(api.url + "/v1/runs", json={"input": "hi"}, headers={"x-api-key": "k" * 5_000}, timeout=10)
    # Then it is a 400 naming the header, and nothing is stored
    error = response.json()["error"]
    assert (response.status_code, error["details"]["errors"][0]["field"]) == (400, "x-api-key (header)")
    assert "5000 characters" in error["message"]
    assert items_in_table(api) == 0


UNKNOWN = "not a parameter: this route takes "


@pytest.mark.parametrize(
    ("path", "params", "accept", "field", "reason"),
    [
        ("/v1/runs", {"stauts": "FAILED"}, "application/json", "stauts", UNKNOWN),
        ("/v1/approvals", {"cursr": "x"}, "application/json", "cursr", UNKNOWN),
        ("/v1/runs/run-1/events", {"stauts": "FAILED"}, "application/json", "stauts", UNKNOWN),
        ("/v1/runs/run-1/events", {"stauts": "FAILED"}, "text/event-stream", "stauts", UNKNOWN),
        ("/v1/runs", {"profile": ["a", "b"]}, "application/json", "profile", "given 2 times: it takes one value"),
        ("/v1/runs/run-1/events", {"after": ["a", "b"]}, "text/event-stream", "after", "given 2 times"),
    ],
    ids=["list", "approvals", "events", "events streamed", "a filter twice", "a cursor twice streamed"],
)
def test_a_query_parameter_a_route_does_not_take_or_given_twice_is_refused_naming_it(
    api: LocalApi, path: str, params: dict[str, Any], accept: str, field: str, reason: str
) -> None:
    # When a route that takes query parameters is sent one it does not take (a misspelled filter), or one twice
    response = httpx.get(api.url + path, params=params, headers={"x-api-key": "k", "accept": accept}, timeout=10)
    # Then it is a 422 naming it and why, instead of an answer that ignored it or a reason that puzzles
    [error] = response.json()["error"]["details"]["errors"]
    assert (response.status_code, error["field"]) == (422, f"{field} (query parameter)")
    assert error["reason"].startswith(reason)


def test_a_route_without_query_parameters_lets_a_clients_own_through(api: LocalApi) -> None:
    # When the models are listed with a parameter a client adds on its own (Azure's, a cache buster)
    response = httpx.get(api.url + "/v1/models", params={"api-version": "2024-10-21"}, headers={"x-api-key": "k"})
    # Then it is answered as without it
    assert response.status_code == 200 and response.json()["data"]
