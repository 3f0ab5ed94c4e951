"""Shared fixtures of the intent tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from intent_fakes import CapturedLogs

from stepwise.config.intent import Category


@pytest.fixture
def route_and_cache() -> list[Category]:
    """Two categories, as in the Higress documentation: where to route, and whether the answer may be cached."""
    return [
        Category(use_for="intent-route", options=["Finance", "E-commerce", "Law", "Others"]),
        Category(use_for="disable-cache", options=["Time-sensitive", "Non-time-sensitive"], default="Time-sensitive"),
    ]


@pytest.fixture
def captured_logs() -> Iterator[CapturedLogs]:
    captured = CapturedLogs()
    yield captured
    # The logger outlives the test (logging keeps every named logger); detach it from the buffer.
    underlying = logging.getLogger(captured.logger.name)
    for handler in list(underlying.handlers):
        underlying.removeHandler(handler)
