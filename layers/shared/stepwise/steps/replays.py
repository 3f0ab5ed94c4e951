"""Replaying a stored run: a new, ordinary run of the same conversation under the profile asked for, whose
tool calls are answered from the original's recording (`stepwise.steps.replay_tools`).

With `from_iteration` k the replay is a fork: the original's first k iterations (the model's messages,
their decisions and observations, with their trace) are copied as stored, and the execution starts at
iteration k + 1, so the new model goes on from there; nothing of those k iterations runs again. The new
run's META names its original (`replay`); both `stepwise replay` and `POST /v1/runs/{run_id}/replay`
start a replay through `prepare_replay`.
"""

from __future__ import annotations

from typing import Literal

from stepwise.errors import RunAlreadyExists
from stepwise.models.run import ReplayLink, RunMeta
from stepwise.steps.runs import new_run_meta
from stepwise.steps.runtime import StepRuntime


class ReplayRefused(Exception):
    """The replay asked for cannot be made; `field` names what to change and the message says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def prepare_replay(
    runtime: StepRuntime,
    original: RunMeta,
    *,
    owner: str,
    profile: str | None = None,
    from_iteration: int = 0,
    live_tools: bool = False,
    metadata: dict[str, str] | None = None,
    ttl_days: int = 30,
    workflow_type: Literal["STANDARD", "EXPRESS"] = "STANDARD",
) -> RunMeta:
    """Store the replay of `original` (QUEUED) for `owner`; the caller starts its execution with
    `stepwise.steps.runs.start_input`. `ReplayRefused` when the original has not ended, `from_iteration`
    is not one of its iterations, or the profile is unknown."""
    if not original.is_terminal:
        raise ReplayRefused("run_id", f"run {original.run_id} is still {original.status}; replay a run that ended")
    if from_iteration and from_iteration >= original.iteration:
        kept = "it has no iteration to keep" if original.iteration < 2 else f"keep 0 to {original.iteration - 1}"
        raise ReplayRefused(
            "from_iteration",
            f"run {original.run_id} ended at iteration {original.iteration}, so the new model must go on from "
            f"an iteration before it; {kept}",
        )
    chosen = profile or original.profile
    if chosen not in runtime.config.profiles:
        raise ReplayRefused(
            "profile", f"unknown profile {chosen!r}; the profiles are {', '.join(sorted(runtime.config.profiles))}"
        )
    meta = new_run_meta(
        runtime,
        owner=owner,
        profile=chosen,
        intent=original.intent,
        metadata=metadata,
        options=original.options,
        replay=ReplayLink(original_run_id=original.run_id, from_iteration=from_iteration, live_tools=live_tools),
        ttl_days=ttl_days,
        workflow_type=workflow_type,
    )
    # the same question: a listing shows and searches the replay by it
    meta = meta.model_copy(update={"question": original.question})
    if not runtime.store.create_replay_run(meta, original.run_id, from_iteration):
        raise RunAlreadyExists(f"run {meta.run_id} already exists")
    return meta
