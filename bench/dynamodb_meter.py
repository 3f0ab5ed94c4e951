"""Counts DynamoDB requests, the bytes writes send and reads receive, and the time spent waiting on them.

Hooked on botocore's events (before-call, after-call) of every botocore session created while it is
installed (boto3's default session, and the store's clients, which have sessions of their own), so it sees
every client the handlers create after it is installed, at the wire, without touching their code. A request
is counted once per call the code makes: an attempt the SDK repeats after a dropped connection (a busy
machine) is the SDK's, not the code's, and would make the counts depend on the load.
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
        self._sessions: list[Any] = []
        self._original_init: Any = None

    def install(self) -> DynamoDBMeter:
        """Start metering DynamoDB clients created from now on."""
        import boto3
        import botocore.session

        original_init = botocore.session.Session.__init__
        meter = self

        def metered_init(session: Any, *args: Any, **kwargs: Any) -> None:
            original_init(session, *args, **kwargs)
            meter._hook(session)

        self._original_init = original_init
        botocore.session.Session.__init__ = metered_init  # type: ignore[method-assign,assignment]
        boto3.setup_default_session()
        self.installed = True
        return self

    def _hook(self, session: Any) -> None:
        session.register("before-call.dynamodb", self._start)
        session.register("after-call.dynamodb", self._stop)
        self._sessions.append(session)

    def uninstall(self) -> None:
        """Stop metering."""
        import botocore.session

        if self._original_init is not None:
            botocore.session.Session.__init__ = self._original_init  # type: ignore[method-assign]
            self._original_init = None
        for session in self._sessions:
            session.unregister("before-call.dynamodb", self._start)
            session.unregister("after-call.dynamodb", self._stop)
        self._sessions.clear()
        self.installed = False

    def _start(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self._started.at = time.perf_counter()
        body = params.get("body") or b""
        with self._lock:
            self.calls[model.name] += 1
            if model.name in WRITE_OPERATIONS:
                self.bytes_written += len(body.encode() if isinstance(body, str) else body)

    def _stop(self, http_response: Any = None, model: Any = None, **_: Any) -> None:
        elapsed = time.perf_counter() - getattr(self._started, "at", time.perf_counter())
        body = getattr(http_response, "content", b"") or b""
        is_read = model is not None and model.name not in WRITE_OPERATIONS
        with self._lock:
            self.seconds += elapsed
            if is_read:
                self.bytes_read += len(body)

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
