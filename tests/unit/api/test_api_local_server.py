"""How `stepwise serve` hands requests to the API function: the API Gateway event, and warm instances."""

from __future__ import annotations

import base64
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stepwise.local.server import FunctionInstances, api_gateway_event


def event_for(target: str, headers: list[tuple[str, str]], body: bytes = b"", method: str = "GET") -> dict[str, Any]:
    return api_gateway_event(method=method, target=target, headers=headers, body=body, host="h:1", source_ip="1.2.3.4")


def test_a_request_becomes_the_proxy_event_api_gateway_sends() -> None:
    # When a GET with a path parameter, repeated query values and an API key is turned into an event
    event = event_for("/v1/runs/abc?trace=true&tag=a&tag=b", [("x-api-key", "key-1"), ("Accept", "*/*")])
    # Then the resource, path parameters, both query views and the caller's key id are where API Gateway puts them
    assert (event["resource"], event["pathParameters"]) == ("/v1/runs/{run_id}", {"run_id": "abc"})
    assert event["queryStringParameters"] == {"trace": "true", "tag": "b"}
    assert event["multiValueQueryStringParameters"] == {"trace": ["true"], "tag": ["a", "b"]}
    assert event["requestContext"]["identity"]["apiKeyId"] == "key-1"
    assert (event["body"], event["isBase64Encoded"]) == (None, False)


def test_without_an_api_key_the_identity_has_no_key_id() -> None:
    # When a request has no x-api-key header, then the event's identity names no key
    assert "apiKeyId" not in event_for("/v1/runs", [("Accept", "*/*")])["requestContext"]["identity"]


def test_a_binary_body_is_sent_base64_encoded() -> None:
    # When a body that is not UTF-8 is sent
    event = event_for("/v1/runs", [], body=b"\xff\xfe", method="POST")
    # Then it arrives base64-encoded, as API Gateway sends binary bodies
    assert (event["isBase64Encoded"], base64.b64decode(event["body"])) == (True, b"\xff\xfe")


class HeldInstance:
    """An instance of a function whose invocations wait until `release` is set."""

    def __init__(self, release: threading.Event, started: threading.Semaphore) -> None:
        self.release = release
        self.started = started

    def invoke(self, logical_id: str, event: Any) -> Any:
        self.started.release()
        self.release.wait(timeout=10)
        return id(self)


def test_concurrent_requests_each_get_an_instance_up_to_the_limit() -> None:
    # Given a function limited to two instances whose invocations are held
    release, started = threading.Event(), threading.Semaphore(0)
    created: list[HeldInstance] = []

    def new_instance() -> HeldInstance:
        created.append(HeldInstance(release, started))
        return created[-1]

    instances = FunctionInstances("Api", new_instance(), new_instance, max_instances=2)
    # When three requests arrive at once
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = [pool.submit(instances.invoke, {}) for _ in range(3)]
        assert started.acquire(timeout=10) and started.acquire(timeout=10)
        # Then two instances serve the first two while the third request waits for one to be free
        assert len(created) == 2 and not started.acquire(timeout=0.2)
        release.set()
        served_by = [result.result(timeout=10) for result in results]
    assert set(served_by) == {id(instance) for instance in created}
