"""Protocol apps mounted on the front (A2A, MCP): their paths reach them, and they call the API as their caller."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import httpx
import pytest

from stepwise.interop.api_calls import api_caller_of
from stepwise.interop.mounts import ProtocolApp
from stepwise.local.http_front import ApiFront, FrontLimits

LIMITS = FrontLimits(max_body_bytes=1024, read_timeout_seconds=2, idle_timeout_seconds=1, workers=2, waiting_workers=2)


def api_function(event: dict[str, Any]) -> dict[str, Any]:
    """Answers with who called, and which method and path."""
    identity = event["requestContext"].get("identity") or {}
    body = {"caller": identity.get("apiKeyId"), "route": f"{event['httpMethod']} {event['path']}"}
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


async def whoami_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A protocol app that reads its body, asks the API who is calling, and answers with the API's words."""
    received = b""
    while True:
        message = await receive()
        received += message.get("body", b"")
        if not message.get("more_body"):
            break
    caller = api_caller_of(scope)
    answer = await anyio.to_thread.run_sync(caller.request, "GET", "/v1/runs")
    body = json.dumps({"api": answer.body, "path": scope["path"], "size": len(received)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def front() -> Iterator[ApiFront]:
    mounted = ProtocolApp("whoami", whoami_app, prefixes=("/proto",), paths=("/.well-known/thing.json",))
    served = ApiFront(api_function, limits=LIMITS, protocol_apps=[mounted]).start()
    yield served
    served.stop()


def test_a_protocol_path_is_answered_by_its_app_which_calls_the_api_as_the_same_caller(front: ApiFront) -> None:
    # When a client with a key calls a path under the protocol's prefix
    answer = httpx.post(f"{front.url}/proto/agent", content=b"hello", headers={"x-api-key": "k-1"})
    # Then the protocol app answers, and the API it called saw the same caller
    assert answer.json() == {"api": {"caller": "k-1", "route": "GET /v1/runs"}, "path": "/proto/agent", "size": 5}


def test_an_exact_protocol_path_is_the_apps_and_other_paths_stay_the_apis(front: ApiFront) -> None:
    # When a client reads the protocol's exact path, and an API path
    card = httpx.get(f"{front.url}/.well-known/thing.json", headers={"x-api-key": "k-2"})
    api = httpx.get(f"{front.url}/v1/runs", headers={"x-api-key": "k-2"})
    # Then the first is the app's, the second the API's own
    assert (card.json()["path"], api.json()["route"]) == ("/.well-known/thing.json", "GET /v1/runs")


def test_a_protocol_body_over_the_limit_is_413(front: ApiFront) -> None:
    # When a body over the front's limit is sent to a protocol path
    answer = httpx.post(f"{front.url}/proto/agent", content=b"x" * 2048)
    # Then it is refused as the API's own routes refuse it
    assert (answer.status_code, answer.json()["error"]["type"]) == (413, "payload_too_large")
