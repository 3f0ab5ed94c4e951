"""What every tool is, whatever its source: a spec the model sees, and a call that returns a result.

HTTP tools from configuration and from OpenAPI documents, MCP tools, built-in and deployer Python tools
all implement `Tool`. A tool may raise `ToolError` (or anything else):
the invoker turns every failure into an observation, so a tool never has to catch for the run's sake.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from stepwise.models.messages import ToolSpec


class ToolResult(BaseModel):
    """What a tool produced: the text for the model, and whether it succeeded.

    ``truncated`` says the tool already cut its output (a capped response body). A tool that cuts text
    which may hold secrets redacts it before cutting (see `Redactor.redact`'s ``cut_at_end``); the
    invoker redacts every result again as a whole.
    """

    content: str
    ok: bool = True
    status_code: int | None = None
    error: str | None = None
    truncated: bool = False


@runtime_checkable
class Tool(Protocol):
    """A callable tool: ``spec`` is offered to the model, ``call`` runs it on validated arguments."""

    @property
    def spec(self) -> ToolSpec:
        """Name, description and JSON-schema parameters."""
        ...

    def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool once; arguments were already validated against ``spec.parameters``."""
        ...
