"""Hostile bytes at the API: refused with a 4xx naming the field before anything is stored or started.

Each request goes to `functions/api/app.py` as Lambda hands it over (moto behind it). "No worker held"
is asserted by what the request cost: no item written, no execution started, one answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from tests.integration.test_api_handler import ApiHandler, api_config, start_handler


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiHandler]:
    with mock_aws():
        yield start_handler(tmp_path, monkeypatch, api_config())


def raw_json(text: str) -> bytes:
    """A body whose JSON escapes are sent as written (`\\ud800` stays an escape, as a hostile client sends it)."""
    return text.encode("ascii")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (r'{"input": "x\ud800"}', "input"),
        (r'{"input": "hi", "session_id": "s\udfff"}', "session_id"),
        (
            r'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\udfff"}]}]}',
            "messages.0.content.0.text",
        ),
        (r'{"input": "hi", "metadata": {"k": "\ud800"}}', "metadata.k"),
        (r'{"input": "hi", "metadata": {"\ud800": "v"}}', "metadata (a key)"),
    ],
)
def test_a_lone_surrogate_anywhere_is_a_422_naming_its_field_and_nothing_is_stored(
    handler: ApiHandler, body: str, field: str
) -> None:
    # When a body carries a lone surrogate somewhere
    status, answer = handler.call("POST", "/v1/runs", raw_json(body))

    # Then it is refused, naming the field and the reason
    assert status == 422
    assert answer["error"]["type"] == "invalid_request"
    assert answer["error"]["details"]["errors"][0]["field"] == field
    assert "cannot be encoded as UTF-8" in answer["error"]["details"]["errors"][0]["reason"]
    # And it cost nothing behind the API: no item, no execution
    assert handler.items() == []
    assert handler.executions() == []


def test_a_surrogate_in_a_chat_completion_is_refused_the_same_way(handler: ApiHandler) -> None:
    # When the OpenAI facade gets a lone surrogate in a message
    body = r'{"model": "default", "messages": [{"role": "user", "content": "why\ud83d"}]}'
    status, answer = handler.call("POST", "/v1/chat/completions", raw_json(body))

    # Then it is a 422 naming the message's content, and no run was started
    assert (status, answer["error"]["details"]["errors"][0]["field"]) == (422, "messages.0.content")
    assert handler.executions() == []


def test_a_header_that_cannot_be_stored_is_a_422_naming_the_header(handler: ApiHandler) -> None:
    # When a header value holds a lone surrogate (possible in an API Gateway event, which is JSON)
    status, answer = handler.call("GET", "/v1/runs/abc", headers={"X-Trace": "a\udc80"})

    # Then the header is named
    assert status == 422
    assert answer["error"]["details"]["errors"][0]["field"] == "x-trace (header)"


def test_a_body_nested_ten_thousand_deep_is_a_400_naming_the_depth_limit(handler: ApiHandler) -> None:
    # When the body nests 10,000 arrays inside `input`
    body = '{"input": ' + "[" * 10_000 + "]" * 10_000 + "}"
    status, answer = handler.call("POST", "/v1/runs", raw_json(body))

    # Then it is invalid JSON for this API, and the answer says which limit and by how much
    assert status == 400
    assert answer["error"]["type"] == "invalid_json"
    assert answer["error"]["details"] == {"limit": "depth", "maximum": 32, "actual": 10_001}
    assert handler.items() == []


def test_brackets_inside_strings_do_not_count_as_nesting(handler: ApiHandler) -> None:
    # When the question itself is made of brackets
    status, answer = handler.call("POST", "/v1/runs", {"input": "[" * 5_000 + "{" * 5_000})

    # Then it is an ordinary question
    assert status == 202, json.dumps(answer)
    assert len(handler.executions()) == 1


def test_every_hostile_request_is_answered_and_a_normal_one_still_is_after_them(handler: ApiHandler) -> None:
    # Given eight 20-byte hostile requests (they once held every worker for 25 s each)
    answers = [handler.call("POST", "/v1/runs", raw_json(r'{"input": "x\ud800"}'))[0] for _ in range(8)]

    # When an ordinary request follows
    status, _ = handler.call("GET", "/v1/openapi.json")

    # Then each hostile one was a 422 and the ordinary one is answered
    assert answers == [422] * 8
    assert status == 200
    assert handler.items() == []


def test_a_nul_in_the_question_is_valid_json_and_is_stored_replaced(handler: ApiHandler) -> None:
    # When the question holds a NUL (valid JSON and UTF-8, unlike a lone surrogate)
    status, _ = handler.call("POST", "/v1/runs", raw_json(r'{"input": "a\u0000b"}'))

    # Then the run is accepted, and the store holds the character replaced by the text policy
    assert status == 202
    stored = [item["content"]["S"] for item in handler.items() if "content" in item]
    assert stored == ["a\ufffdb"]


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"x-api-key": "k" * 5_000}, "x-api-key (header)"),
        ({"Authorization": "Bearer " + "k" * 5_000}, "Authorization (header)"),
        ({"x-api-key": "caf\u00e9-key"}, "x-api-key (header)"),
    ],
    ids=["x-api-key of 5,000 characters", "bearer token of 5,000 characters", "non-ASCII key"],
)
def test_a_key_no_owner_can_have_is_a_400_naming_the_header_and_nothing_is_stored(
    handler: ApiHandler, headers: dict[str, str], field: str
) -> None:
    # When a run is asked for with a key that cannot be an owner (it would be a DynamoDB key over 2,048 bytes)
    status, answer = handler.call("POST", "/v1/runs", {"input": "hi"}, key=None, headers=headers)

    # Then it is a 400 naming the header, and nothing was written or started
    assert status == 400
    assert answer["error"]["type"] == "invalid_identity"
    assert answer["error"]["details"]["errors"][0]["field"] == field
    assert handler.items() == []
    assert handler.executions() == []


@pytest.mark.parametrize(
    "content_type", ["APPLICATION/JSON; charset=UTF-8", "Application/Json", "application/json;charset=utf-8"]
)
def test_a_json_media_type_in_any_case_with_parameters_is_accepted(handler: ApiHandler, content_type: str) -> None:
    # When a run is asked for with the JSON media type written in another case, with a charset
    status, answer = handler.call("POST", "/v1/runs", {"input": "hi"}, headers={"Content-Type": content_type})

    # Then it is accepted like any JSON body
    assert status == 202, json.dumps(answer)
    assert len(handler.executions()) == 1


def test_a_body_of_another_media_type_is_a_415(handler: ApiHandler) -> None:
    # When the body is sent as text
    status, answer = handler.call("POST", "/v1/runs", b'{"input": "hi"}', headers={"Content-Type": "TEXT/PLAIN"})

    # Then it is refused as the wrong media type, and nothing was written
    assert (status, answer["error"]["type"]) == (415, "unsupported_media_type")
    assert handler.items() == []
