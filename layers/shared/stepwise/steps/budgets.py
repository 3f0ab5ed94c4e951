"""Token and cost budgets: what a run has spent so far, its cost, and whether a cap is reached.

Spending is summed from the run's trace (each model call's step holds its tokens), so nothing is added
to META while the run goes on; it is read only for runs that have a budget.
"""

from __future__ import annotations

from stepwise.models.run import FinalRoundReason, RunMeta, RunUsage, StepRecord
from stepwise.steps.runtime import StepRuntime


def priced_usage(meta: RunMeta, steps: list[StepRecord], runtime: StepRuntime) -> RunUsage:
    """The run's usage from its trace, with its cost when the profile's model has prices."""
    usage = RunUsage.from_steps(steps)
    prices = runtime.config.model_prices(meta.profile)
    if prices is None:
        return usage
    return usage.model_copy(update={"cost_usd": round(prices.cost_usd(usage.input_tokens, usage.output_tokens), 6)})


def has_budget(meta: RunMeta) -> bool:
    """True when the run is capped on tokens or cost."""
    return meta.limits.max_total_tokens is not None or meta.limits.max_cost_usd is not None


def budget_reached(meta: RunMeta, runtime: StepRuntime) -> FinalRoundReason | None:
    """`token_budget` or `cost_budget` once the run has spent its cap, else None."""
    usage = priced_usage(meta, runtime.store.list_steps(meta.run_id), runtime)
    limits = meta.limits
    if limits.max_total_tokens is not None and usage.input_tokens + usage.output_tokens >= limits.max_total_tokens:
        return "token_budget"
    if limits.max_cost_usd is not None and usage.cost_usd is not None and usage.cost_usd >= limits.max_cost_usd:
        return "cost_budget"
    return None
