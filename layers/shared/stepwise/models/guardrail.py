"""The `guardrail` step of a run's trace: which point, which rules acted and how; never a value they found."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class GuardrailAction(BaseModel, defer_build=True):
    """One rule that acted at a point."""

    rule: str = Field(description="`pii:<kinds>`, `deny[:<label>]` or `bedrock:<id>:<version>`.")
    action: Literal["redacted", "blocked", "masked"]
    detail: str | None = Field(
        default=None,
        description="Counts per kind (`card=1`), the deny patterns matched (by index), or the Bedrock policies "
        "that acted; never the text.",
    )


class GuardrailNote(BaseModel, defer_build=True):
    """What the guardrails of one point did to one text."""

    point: Literal["input", "tool_results", "output"]
    mode: Literal["enforce", "log_only"] = Field(description="`log_only`: recorded, the text went on unchanged.")
    blocked: bool = Field(description="The text was blocked (in log_only mode: would have been).")
    actions: list[GuardrailAction]
