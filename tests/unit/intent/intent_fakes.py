"""Stand-ins at the intent module's wire boundary: a chat model with canned replies, a log capture."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

from aws_lambda_powertools import Logger

from stepwise.models.messages import ChatRequest, Completion


class CannedChatModel:
    """Implements the ChatModel protocol: answers each call with the next canned reply, or raises it."""

    def __init__(self, *replies: str | BaseException, model: str = "intent-test-model") -> None:
        self._replies = list(replies)
        self._model = model
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        reply = self._replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return Completion(content=reply, model=self._model, finish_reason="stop")


class CapturedLogs:
    """A Powertools Logger writing JSON lines to memory, and those lines decoded."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        # A service name of its own: Powertools configures a logger name only once per process. The level is
        # explicit because the suite's conftest sets POWERTOOLS_LOG_LEVEL=WARNING.
        self.logger = Logger(service=f"stepwise-intent-test-{uuid.uuid4().hex}", stream=self.stream, level="INFO")

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]
