"""Delegation to another agent: what a child run is given of its parent's time and budget, and how a parent
lists its children."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ChildAllotment(BaseModel, defer_build=True):
    """The share of its parent's deadline and budget one child run gets, decided once with the calls (Parse
    stores it on the decision, so a retried or resumed step starts the child with the same share)."""

    model_config = ConfigDict(extra="forbid")

    deadline: float = Field(description="When the child must have ended (epoch seconds), before its parent's.")
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


class ChildRunLink(BaseModel, defer_build=True):
    """One child run of a run, as `GET /v1/runs/{run_id}` lists it."""

    run_id: str = Field(description="The child run's id: `GET /v1/runs/{run_id}` reads it.")
    profile: str = Field(description="The profile the parent delegated to (the tool its model called).")
    call_id: str = Field(description="The parent's tool call that started it.")
    iteration: int = Field(description="The parent's iteration that made the call.")
    status: Literal[
        "QUEUED", "RUNNING", "WAITING_APPROVAL", "WAITING_BUDGET", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"
    ] = Field(description="The child run's status.")
