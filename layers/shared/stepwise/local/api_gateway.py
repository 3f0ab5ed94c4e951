"""API Gateway's side of a local request: the REST (v1) proxy event, and warm instances of the function.

Each HTTP request becomes the proxy event API Gateway would send `ApiFunction`; the caller's key
(`x-api-key`, or `Authorization: Bearer`, see `presented_api_key`) becomes the identity's key id, so two
keys are two owners.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from stepwise.steps.api.caller_key import presented_api_key
from stepwise.streaming.proxy_event import proxy_event

DEFAULT_MAX_API_INSTANCES = 8
LOCAL_STAGE = "local"
# The account and region the local engine puts in its ARNs.
LOCAL_ACCOUNT = "000000000000"
LOCAL_REGION = "us-east-1"


class FunctionInvoker(Protocol):
    """What `LocalLambdaInvoker` offers: invoke a function of the template by logical id."""

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Invoke the function `logical_id` with `event`."""
        ...


def api_gateway_event(
    *, method: str, target: str, headers: list[tuple[str, str]], body: bytes, host: str, source_ip: str
) -> dict[str, Any]:
    """The API Gateway REST proxy event for one HTTP request (`target` is the path with its query)."""
    api_key = presented_api_key(headers)
    user_agent = next((value for name, value in headers if name.lower() == "user-agent"), None)
    identity: dict[str, Any] = {"sourceIp": source_ip, "userAgent": user_agent}
    if api_key:
        identity |= {"apiKey": api_key, "apiKeyId": api_key}
    context = {
        "accountId": LOCAL_ACCOUNT,
        "apiId": "local",
        "domainName": host,
        "identity": identity,
        "path": unquote(urlsplit(target).path) or "/",
        "protocol": "HTTP/1.1",
        "requestId": str(uuid.uuid4()),
        "requestTimeEpoch": int(time.time() * 1000),
        "stage": LOCAL_STAGE,
    }
    return proxy_event(method=method, target=target, headers=headers, body=body, request_context=context)


class FunctionInstances:
    """Warm instances of one function, each handling one request at a time, as Lambda's environments do.

    `first` is used first; `new_instance` loads another copy of the handler when all are busy, up to
    `max_instances`; past that a request waits for an instance to be free.
    """

    def __init__(
        self,
        logical_id: str,
        first: FunctionInvoker,
        new_instance: Callable[[], FunctionInvoker],
        *,
        max_instances: int = DEFAULT_MAX_API_INSTANCES,
    ) -> None:
        self._logical_id = logical_id
        self._idle = [first]
        self._new_instance = new_instance
        self._count = 1
        self._max = max_instances
        self._available = threading.Condition()

    def _acquire(self) -> FunctionInvoker:
        with self._available:
            while not self._idle and self._count >= self._max:
                self._available.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        return self._new_instance()

    def invoke(self, event: dict[str, Any]) -> Any:
        """Invoke the function with `event` on a free instance."""
        instance = self._acquire()
        try:
            return instance.invoke(self._logical_id, event)
        finally:
            with self._available:
                self._idle.append(instance)
                self._available.notify()
