"""Fixtures of the protocol tests: the tools a model is offered and recorded-style model outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepwise.models.messages import ToolSpec

SAMPLES = Path(__file__).parent / "samples"


@pytest.fixture
def read_sample() -> Callable[[str], str]:
    """Read a model output from samples/, e.g. ``read_sample("react_json/two_blocks.txt")``."""

    def read(name: str) -> str:
        return (SAMPLES / name).read_text(encoding="utf-8")

    return read


@pytest.fixture
def read_response() -> Callable[[str], dict[str, Any]]:
    """Read a provider response dict from samples/providers/."""

    def read(name: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((SAMPLES / "providers" / name).read_text(encoding="utf-8"))
        return loaded

    return read


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": required},
    )


@pytest.fixture
def tools() -> list[ToolSpec]:
    """The tools the sample outputs call, with realistic JSON schemas."""
    text = {"type": "string"}
    return [
        _tool(
            "get_weather",
            "Current weather for a city.",
            {"city": text, "days": {"type": "integer"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
            ["city"],
        ),
        _tool("search", "Search the web.", {"query": text, "limit": {"type": "integer"}}, ["query"]),
        _tool(
            "convert_currency",
            "Convert an amount between currencies.",
            {"amount": {"type": "number"}, "from": text, "to": text},
            ["amount", "from", "to"],
        ),
        _tool(
            "create_ticket",
            "Open a helpdesk ticket.",
            {"title": text, "urgent": {"type": "boolean"}, "assignee": text, "tags": {"type": "array"}},
            ["title"],
        ),
        _tool("query_records", "Query stored records.", {"filter": {"type": "object"}, "note": text}, []),
        _tool("run_sql", "Run a read-only SQL query.", {"query": text, "limit": {"type": "integer"}}, ["query"]),
        _tool("get_time", "The current time.", {}, []),
    ]
