"""Counts DynamoDB requests, the bytes writes send and reads receive, and the time spent waiting on them.

Hooked on botocore's events (before-call, before-send, after-call) of boto3's default session, so it
sees every client the handlers create after it is installed, at the wire, without touching their code.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


class DynamoDBMeter:
    """Request counts, write bytes and seconds spent in DynamoDB calls, across threads."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes_written = 0
        self.bytes_read = 0
        self.seconds = 0.0
        self.installed = False
        self._lock = threading.Lock()
        self._started = threading.local()

    def install(self) -> DynamoDBMeter:
        """Start metering DynamoDB clients created from now on."""
        import boto3

        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
        assert session is not None
        session.events.register("before-call.dynamodb", self._start)
        session.events.register("before-send.dynamodb", self._count)
        session.events.register("after-call.dynamodb", self._stop)
        self.installed = True
        return self

    def uninstall(self) -> None:
        """Stop metering."""
        import boto3

        session = boto3.DEFAULT_SESSION
        if session is not None and self.installed:
            session.events.unregister("before-call.dynamodb", self._start)
            session.events.unregister("before-send.dynamodb", self._count)
            session.events.unregister("after-call.dynamodb", self._stop)
        self.installed = False

    def _start(self, **_: Any) -> None:
        self._started.at = time.perf_counter()

    def _stop(self, http_response: Any = None, model: Any = None, **_: Any) -> None:
        elapsed = time.perf_counter() - getattr(self._started, "at", time.perf_counter())
        body = getattr(http_response, "content", b"") or b""
        is_read = model is not None and model.name not in WRITE_OPERATIONS
        with self._lock:
            self.seconds += elapsed
            if is_read:
                self.bytes_read += len(body)

    def _count(self, request: Any, **_: Any) -> None:
        operation = str(request.headers.get("X-Amz-Target", b"")).split(".")[-1].strip("'")
        with self._lock:
            self.calls[operation] += 1
            if operation in WRITE_OPERATIONS:
                self.bytes_written += len(request.body or b"")

    def reset(self) -> None:
        """Forget what was counted."""
        with self._lock:
            self.calls.clear()
            self.bytes_written = 0
            self.bytes_read = 0
            self.seconds = 0.0

    @property
    def total_calls(self) -> int:
        """Requests of any operation."""
        return sum(self.calls.values())
