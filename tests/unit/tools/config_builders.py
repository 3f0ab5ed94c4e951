"""Builders of raw tool configuration and tool calls, in the shapes a deployer and a model write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepwise.models.messages import ToolCall
from stepwise.tools import ToolInvoker

MakeInvoker = Callable[..., ToolInvoker]
"""The ``make_invoker`` fixture: raw configuration (and options) in, a ready invoker out."""


def api_entry(url: str, tools: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    """One ``apis:`` entry in the configuration's camelCase shape; internal (loopback allowed) by default."""
    return {"url": url, "internal": True, "tools": tools, **settings}


def endpoint(name: str, path: str, properties: dict[str, Any] | None = None, **settings: Any) -> dict[str, Any]:
    """One tool of an API."""
    return {
        "toolName": name,
        "path": path,
        "parameter": {"type": "object", "properties": properties or {}},
        **settings,
    }


def string_properties(*names: str) -> dict[str, Any]:
    """A ``properties`` mapping where every named argument is a string."""
    return {name: {"type": "string"} for name in names}


def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    """A tool call as a model would make it."""
    return ToolCall(id=f"call-{tool_name}", name=tool_name, arguments=arguments)
