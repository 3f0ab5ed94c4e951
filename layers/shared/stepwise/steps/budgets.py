"""Token and cost budgets: what a run has spent so far, its cost, and whether a cap is reached.

Spending is summed from the run's trace (each model call's step holds its tokens), so nothing is added
to META while the run goes on; the trace is read only for runs that have a budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepwise.models.run import FinalRoundReason, RunUsage, StepRecord

if TYPE_CHECKING:
    # for the signatures only: the API prices usage with this module and never reads a state payload
    from stepwise.models.state import RunContext
    from stepwise.steps.runtime import StepRuntime


def priced_usage(profile: str, steps: list[StepRecord], runtime: StepRuntime) -> RunUsage:
    """A run's usage from its trace, with its cost when the profile's model has prices."""
    usage = RunUsage.from_steps(steps)
    prices = runtime.config.model_prices(profile)
    if prices is None:
        return usage
    return usage.model_copy(update={"cost_usd": round(prices.cost_usd(usage.input_tokens, usage.output_tokens), 6)})


def has_budget(run: RunContext) -> bool:
    """True when the run is capped on tokens or cost."""
    return run.max_total_tokens is not None or run.max_cost_usd is not None


def budget_reached(run_id: str, run: RunContext, runtime: StepRuntime) -> FinalRoundReason | None:
    """`token_budget` or `cost_budget` once the run has spent its cap, else None."""
    usage = priced_usage(run.profile, runtime.store.list_steps(run_id), runtime)
    if run.max_total_tokens is not None and usage.input_tokens + usage.output_tokens >= run.max_total_tokens:
        return "token_budget"
    if run.max_cost_usd is not None and usage.cost_usd is not None and usage.cost_usd >= run.max_cost_usd:
        return "cost_budget"
    return None
