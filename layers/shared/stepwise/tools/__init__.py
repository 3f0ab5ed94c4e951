"""Tools: configured HTTP APIs, built-in and deployer Python tools, and the guarded invoker.

The ToolInvoke step builds a registry once per container and invokes each call the model made::

    registry = build_tool_registry(config, config_dir=config_dir)
    observation = ToolInvoker(registry).invoke(call)   # never raises

A deployer's module (listed under ``python:``) defines tools with ``from stepwise.tools import tool``.
"""

from stepwise.tools.base import Tool, ToolResult
from stepwise.tools.function_tool import FunctionTool, tool
from stepwise.tools.invoker import ToolInvoker
from stepwise.tools.observation import ToolObservation
from stepwise.tools.registry import ToolRegistry, build_tool_registry

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolInvoker",
    "ToolObservation",
    "ToolRegistry",
    "ToolResult",
    "build_tool_registry",
    "tool",
]
