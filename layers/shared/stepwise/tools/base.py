"""What every tool is, whatever its source: a spec the model sees, and a call that returns a result.

HTTP tools from configuration and from OpenAPI documents, MCP tools, built-in and deployer Python tools
all implement `Tool`. A tool may raise `ToolError` (or anything else):
the invoker turns every failure into an observation, so a tool never has to catch for the run's sake.
"""

from __future__ import annotations

from dataclasses import dataclass
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


# The keyword a Python tool declares to be given its call's idempotency key (never offered to the model).
IDEMPOTENCY_KEY_PARAMETER = "idempotency_key"


@dataclass(frozen=True)
class CallContext:
    """What a tool is told of a call besides its arguments.

    ``idempotency_key`` is the same for every attempt of one call and differs between calls (see
    `stepwise.tools.idempotency`): a receiver that remembers it can tell a repeat from a new call. An HTTP
    tool sends it as a header, an MCP tool in the request's ``_meta``, a Python tool as the keyword
    `IDEMPOTENCY_KEY_PARAMETER` when it declares one. None outside a run (a test calling a tool).
    """

    idempotency_key: str | None = None


NO_CONTEXT = CallContext()


@runtime_checkable
class Tool(Protocol):
    """A callable tool: ``spec`` is offered to the model, ``call`` runs it on validated arguments."""

    @property
    def spec(self) -> ToolSpec:
        """Name, description and JSON-schema parameters."""
        ...

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Run the tool once; arguments were already validated against ``spec.parameters``."""
        ...
