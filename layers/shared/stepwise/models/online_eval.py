"""The result of a run's online eval, stored once on its META and shown by `GET /v1/runs/{run_id}`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

OnlineEvalVerdict = Literal["passed", "failed", "error"]


class OnlineEvalCheck(BaseModel, defer_build=True):
    """One check of the profile's `online_evals.expect`: its name, the verdict and why it failed."""

    check: str
    passed: bool
    reason: str | None = None


class OnlineEvalJudgement(BaseModel, defer_build=True):
    """The judge model's grade of the rubric: its verdict and its reason."""

    model: str
    passed: bool
    reason: str


class OnlineEvalResult(BaseModel, defer_build=True):
    """A run's online eval: `passed` when every check (and the judge) passed, `failed` when one did not,
    `error` when the eval could not run (the run's outcome is the same either way)."""

    verdict: OnlineEvalVerdict
    checks: list[OnlineEvalCheck] = Field(default_factory=list)
    judge: OnlineEvalJudgement | None = None
    error: str | None = None
    evaluated_at: str
