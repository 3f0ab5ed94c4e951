"""Fixtures of the provider tests: a loopback OpenAI-compatible server and model configs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import FakeOpenAIServer


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server on 127.0.0.1, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
