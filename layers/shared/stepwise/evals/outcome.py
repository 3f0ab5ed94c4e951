"""A finished run as the checks and the diffs read it, whether read from the store or from the HTTP API.

Both sources describe the same stored items (META and the trace), so a suite run locally and one run
through `stepwise serve` give equal outcomes, the wall-clock seconds aside.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from stepwise.models.api_responses import RunView
from stepwise.models.run import Outcome, RunMeta
from stepwise.models.step_record import StepRecord
from stepwise.steps.outcome import run_outcome


class ToolCallMade(BaseModel):
    """A tool call the run made: where, which tool, with what arguments, and whether it succeeded."""

    iteration: int
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool | None = None
    note: str | None = None


class RunOutcome(BaseModel):
    """What a finished run produced and spent."""

    run_id: str
    status: str
    stop_reason: str | None = None
    outcome: Outcome | None = None
    answer: str | None = None
    output: dict[str, Any] | list[Any] | None = None
    iterations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0
    tool_calls: list[ToolCallMade] = Field(default_factory=list)
    error: str | None = None

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens


def outcome_from_store(meta: RunMeta, steps: list[StepRecord], *, seconds: float = 0.0) -> RunOutcome:
    """The outcome of a run read from the store: its META and its trace."""
    return RunOutcome(
        run_id=meta.run_id,
        status=meta.status,
        stop_reason=meta.stop_reason,
        outcome=run_outcome(meta),
        answer=meta.answer,
        output=meta.output,
        iterations=meta.iteration,
        input_tokens=meta.usage.input_tokens,
        output_tokens=meta.usage.output_tokens,
        cost_usd=meta.usage.cost_usd,
        seconds=seconds,
        tool_calls=[
            ToolCallMade(
                iteration=step.iteration,
                tool=step.action or "",
                arguments=step.arguments or {},
                ok=step.ok,
                note=step.note,
            )
            for step in steps
            if step.kind == "tool"
        ],
        error=f"{meta.error.type}: {meta.error.message}" if meta.error else None,
    )


def outcome_from_api(view: RunView, *, seconds: float = 0.0) -> RunOutcome:
    """The outcome of a run as `GET /v1/runs/{run_id}?trace=true` answered it."""
    return RunOutcome(
        run_id=view.run_id,
        status=view.status,
        stop_reason=view.stop_reason,
        outcome=view.outcome,
        answer=view.answer,
        output=view.output,
        iterations=view.iterations,
        input_tokens=view.usage.input_tokens,
        output_tokens=view.usage.output_tokens,
        cost_usd=view.usage.cost_usd,
        seconds=seconds,
        tool_calls=[
            ToolCallMade(
                iteration=step.iteration,
                tool=step.tool or "",
                arguments=step.arguments or {},
                ok=step.ok,
                note=step.note,
            )
            for step in view.trace or []
            if step.kind == "tool"
        ],
        error=f"{view.error.type}: {view.error.message}" if view.error else None,
    )
