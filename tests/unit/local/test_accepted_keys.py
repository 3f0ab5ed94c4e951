"""`stepwise serve --api-key`: with accepted keys, the front refuses any other key on every route, 401."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepwise.interop.mounts import ProtocolApp
from stepwise.local.http_front import ApiFront, FrontLimits
from stepwise.local.server import accepted_keys

LIMITS = FrontLimits(max_body_bytes=1024, read_timeout_seconds=2, idle_timeout_seconds=1, workers=2, waiting_workers=2)


def api_function(event: dict[str, Any]) -> dict[str, Any]:
    """Answers 200 with the caller's key id, or 401 without one, as the API does."""
    caller = (event["requestContext"].get("identity") or {}).get("apiKeyId")
    status = 200 if caller else 401
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(caller)}


async def protocol_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A protocol that answers 200 to whoever reaches it."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"reached"})


@pytest.fixture(scope="module")
def front() -> Iterator[ApiFront]:
    mounted = ProtocolApp("proto", protocol_app, paths=("/proto",))
    served = ApiFront(api_function, limits=LIMITS, protocol_apps=[mounted], accepted_keys=frozenset({"k-1", "k-2"}))
    served.start()
    yield served
    served.stop()


def test_another_key_is_401_with_a_bearer_challenge_on_an_api_route(front: ApiFront) -> None:
    # When a client presents a key the server was not given
    answer = httpx.get(f"{front.url}/v1/runs", headers={"x-api-key": "k-3"})
    # Then the front refuses it, saying how to authenticate, before the API sees it
    assert (answer.status_code, answer.json()["error"]["type"]) == (401, "unauthorized")
    assert answer.headers["www-authenticate"] == 'Bearer realm="stepwise", error="invalid_token"'


def test_an_accepted_key_reaches_the_api_in_either_header(front: ApiFront) -> None:
    # When clients present accepted keys, as x-api-key and as a bearer token
    plain = httpx.get(f"{front.url}/v1/runs", headers={"x-api-key": "k-1"})
    bearer = httpx.get(f"{front.url}/v1/runs", headers={"authorization": "Bearer k-2"})
    # Then the API answers each as its caller
    assert [(plain.status_code, plain.json()), (bearer.status_code, bearer.json())] == [(200, "k-1"), (200, "k-2")]


def test_a_protocol_path_refuses_another_key_and_serves_an_accepted_one(front: ApiFront) -> None:
    # When the same protocol path is called with another key, then with an accepted one
    refused = httpx.post(f"{front.url}/proto", headers={"authorization": "Bearer k-3"})
    served = httpx.post(f"{front.url}/proto", headers={"x-api-key": "k-1"})
    # Then only the accepted key reaches the protocol's app
    assert (refused.status_code, served.status_code, served.text) == (401, 200, "reached")


def test_no_key_goes_on_to_the_api_which_answers_401(front: ApiFront) -> None:
    # When a request carries no key at all, then the API answers it, as without accepted keys
    assert httpx.get(f"{front.url}/v1/runs").status_code == 401


def test_the_accepted_keys_come_from_the_flag_and_the_environment() -> None:
    # Given keys on the command line and in STEPWISE_API_KEYS, then both are accepted, blanks dropped
    keys = accepted_keys(["a"], {"STEPWISE_API_KEYS": "b, c,,"})
    assert keys == frozenset({"a", "b", "c"})
    # And without either, no key is singled out (any key is accepted)
    assert accepted_keys([], {}) == frozenset()
