"""Fixtures of the step tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    recorded = InMemorySpanExporter()
    yield recorded
    recorded.shutdown()
