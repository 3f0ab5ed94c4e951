"""Resuming the runs a stopped local process left open (QUEUED or RUNNING in the store).

On AWS an execution outlives any process; locally it lives in the process of `stepwise serve` (or
`stepwise run`), so a crash or a stop leaves its run open. The state payload between states is small
and derivable from the stored items: a run whose latest stored step is in iteration N (META records the
iteration only at the first and at the end) re-enters IterationGuard as if iteration N-1 had just ended,
with N-1's count of consecutive parse errors and the spend before N. Every step of iteration N is
idempotent (the model's message, the Parse decision and each observation are conditional puts, and a
step whose result is stored calls nothing again), so replaying the iteration continues from its last
committed step and stores no message twice. A run whose deadline has passed cannot go on: it ends
TIMED_OUT with the reason stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stepwise.models.run import RunError, RunMeta
from stepwise.models.state import ContextState, RunContext, StatePayload
from stepwise.models.step_record import StepRecord
from stepwise.steps.budgets import spend_before
from stepwise.steps.child_ends import answer_parent
from stepwise.steps.context_state import latest_summary_ref
from stepwise.steps.runs import start_input
from stepwise.steps.runtime import StepRuntime
from stepwise.store.open_runs import find_open_runs

STOPPED_PAST_DEADLINE = "LocalEngineStopped"


@dataclass
class Recovery:
    """What a start found open: the runs resumed and the runs ended because their deadline had passed."""

    resumed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)


def resume_input(meta: RunMeta, runtime: StepRuntime) -> dict[str, Any]:
    """The state machine's input that continues `meta` from the start of its latest iteration.

    The payload's run context is rebuilt from META, and its spend and parse-error count from the stored
    trace (read once, here), so a token or cost budget and `max_parse_errors` still hold after the
    restart; each replayed LLMCall adds its stored call.
    """
    if meta.iteration == 0:
        return start_input(meta)
    steps = runtime.store.list_steps(meta.run_id)
    iteration = max([meta.iteration, *(step.iteration for step in steps)])
    # the replayed LLMCall of iteration N adds its stored call again, and the guard after N's replayed calls the
    # child runs they started; a compaction of N is not replayed
    replayed = [
        step for step in steps if step.iteration != iteration or (step.kind != "llm" and step.child_usage is None)
    ]
    spend = spend_before(meta.profile, replayed, iteration + 1, runtime)
    previous = next((step for step in steps if step.kind == "parse" and step.iteration == iteration - 1), None)
    return StatePayload(
        run_id=meta.run_id,
        iteration=iteration - 1,
        next="continue",
        parse_errors=(previous.parse_errors or 0) if previous is not None else 0,
        run=RunContext.from_meta(meta).model_copy(update={"spend": spend}),
        context=context_from_trace(steps, iteration),
    ).model_dump()


def context_from_trace(steps: list[StepRecord], iteration: int) -> ContextState:
    """The payload's context for resuming at `iteration`: the latest summary, found from its compaction step,
    and whether Compact already ran in that iteration (it runs at most once). The request sizes are not
    kept: the resumed LLMCall estimates the whole request, and sends it to Compact if it is too long."""
    found = latest_summary_ref(steps)
    if found is None:
        return ContextState()
    reference, step = found
    here = step.iteration == iteration
    overflow = here and step.compaction is not None and step.compaction.reason == "overflow"
    return ContextState(
        compacted_at=iteration if here else None, overflow_at=iteration if overflow else None
    ).with_summary(reference)


def recover_open_runs(
    runtime: StepRuntime, client: Any, table_name: str, resume: Callable[[str, dict[str, Any]], None]
) -> Recovery:
    """Resume each open run with `resume(run_id, input)`, or end it TIMED_OUT if its deadline passed."""
    recovery = Recovery()
    # children first: a parent resumed first would find its child's execution missing and start it, and
    # resuming the child after that would be refused as a second execution of the same name
    for meta in sorted(find_open_runs(client, table_name), key=lambda meta: -meta.depth):
        if runtime.clock() >= meta.deadline:
            error = RunError(
                type=STOPPED_PAST_DEADLINE,
                message=f"the local engine stopped during iteration {meta.iteration} and was not running again "
                "before the run's deadline",
            )
            ended = runtime.store.finish_run(meta, "TIMED_OUT", stop_reason="deadline", outcome="none", error=error)
            answer_parent(ended, runtime)
            recovery.timed_out.append(meta.run_id)
        else:
            resume(meta.run_id, resume_input(meta, runtime))
            recovery.resumed.append(meta.run_id)
    return recovery
