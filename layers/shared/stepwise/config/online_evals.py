"""A profile's online evals: the suite's checks (and optionally a judge's rubric) applied to a sample of
its production runs as they end (`stepwise.steps.online_eval`; docs/evals.md "Online evals").

The checks are the suite's `expect:` keys, validated by the suite's own model, so a check means the same
in `stepwise eval` and in production. The sample is decided by the run id alone: a retried end, or a
second reader, reaches the same decision.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepwise.evals.expect import Expect

_HASH_BYTES = 8


class OnlineEvals(BaseModel):
    """Which of a profile's runs are evaluated as they end, and how."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    sample: float = Field(ge=0, le=1, description="The share of the profile's runs evaluated, from 0 to 1.")
    expect: Expect = Field(default_factory=Expect)
    judge: str | None = Field(
        default=None, min_length=1, description="The model (of `models:`) that grades the rubric."
    )
    rubric: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _something_to_check(self) -> OnlineEvals:
        if self.expect.rubric is not None:
            raise ValueError("expect.rubric: give the rubric beside expect, as online_evals.rubric")
        if self.rubric is not None and self.judge is None:
            raise ValueError("judge: a rubric needs the model that grades it")
        if self.judge is not None and self.rubric is None:
            raise ValueError("rubric: a judge needs a rubric to grade")
        if self.rubric is None and not self.expect.model_dump(exclude_none=True):
            raise ValueError("expect: name at least one check, or a judge and its rubric")
        return self


def sampled(run_id: str, sample: float) -> bool:
    """True when the run is in the sample: its id's hash, read as a number in [0, 1), is below `sample`.

    A hash rather than a random draw, so a retried Format, and every later reader, decide alike.
    """
    digest = hashlib.sha256(run_id.encode("utf-8")).digest()[:_HASH_BYTES]
    return int.from_bytes(digest, "big") / 2 ** (8 * _HASH_BYTES) < sample
