"""The checks a run must pass, by key (`expect:`): a suite case's, and a profile's online evals'.

Apart from `stepwise.evals.suite` so the configuration (`online_evals`) reads them without loading what
reading a suite file needs (YAML).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stepwise.inputs.json_schemas import checked_json_schema
from stepwise.models.run import Outcome, RunStatus, StopReason
from stepwise.patterns.linear import PatternError, check_pattern


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolExpectation(_Strict):
    """A tool call to find: its name, and arguments that must be among the call's (a subset)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Expect(_Strict):
    """The checks of a case; each one given is checked on every run of the case."""

    answer_contains: str | list[str] | None = None
    answer_not_contains: str | list[str] | None = None
    answer_matches: str | None = Field(default=None, description="A regular expression searched in the answer.")
    answer_equals: str | None = None
    answer_schema: dict[str, Any] | None = Field(
        default=None, description="A JSON schema the answer (the structured output, else the answer's JSON) matches."
    )
    output_equals: dict[str, Any] | None = Field(
        default=None, description="Fields of the structured output (dotted paths) and the values they must have."
    )
    tool_called: str | ToolExpectation | list[str | ToolExpectation] | None = None
    tool_not_called: str | list[str] | None = None
    tool_order: list[str] | None = Field(
        default=None, description="Tools called in this order (others may come between)."
    )
    max_iterations: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)
    stop_reason: StopReason | None = None
    status: RunStatus | None = None
    outcome: Outcome | None = Field(
        default=None, description="`answered` (the model's final answer), `partial` (a limit stopped it) or `none`."
    )
    rubric: str | None = Field(default=None, min_length=1, description="Graded by the suite's judge model.")

    @field_validator("answer_matches")
    @classmethod
    def _a_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_pattern(value)
            except PatternError as exc:
                raise ValueError(exc.reason) from None
        return value

    @field_validator("answer_schema")
    @classmethod
    def _a_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return checked_json_schema(value)
