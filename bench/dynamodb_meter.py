"""Counts DynamoDB requests and the bytes each write sends, at the wire (botocore's before-send event)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


class DynamoDBMeter:
    """Registered on boto3's default session, so it sees every client the handlers create after it."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes_written = 0
        self._lock = threading.Lock()

    def install(self) -> DynamoDBMeter:
        """Start counting requests of DynamoDB clients created from now on."""
        import boto3

        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
        assert session is not None
        session.events.register("before-send.dynamodb", self._count)
        return self

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

    @property
    def total_calls(self) -> int:
        """Requests of any operation."""
        return sum(self.calls.values())
