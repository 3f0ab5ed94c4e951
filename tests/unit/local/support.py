"""Test doubles for the engine's injected dependencies: clock, sleep and Lambda invoker."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
START = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def load_asl(name: str) -> dict[str, Any]:
    """A definition from fixtures/asl/."""
    loaded: dict[str, Any] = json.loads((FIXTURES / "asl" / name).read_text(encoding="utf-8"))
    return loaded


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += timedelta(seconds=seconds)


class RecordingSleep:
    """A sleep that records how long it was asked to wait and moves the fake clock by that much."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.calls: list[float] = []
        self.clock = clock

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.clock is not None:
            self.clock.advance(seconds)


class ScriptedInvoker:
    """A LambdaInvoker whose functions are Python callables; records every call."""

    def __init__(self, functions: dict[str, Callable[[Any], Any]]) -> None:
        self.functions = functions
        self.calls: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, function_name: str, payload: Any) -> Any:
        with self._lock:
            self.calls.append((function_name, payload))
        return self.functions[function_name](payload)

    def payloads(self, function_name: str) -> list[Any]:
        """The payloads `function_name` was called with, in call order."""
        return [payload for name, payload in self.calls if name == function_name]
