"""Token and cost budgets: what a run has spent so far, its cost, and whether a cap is reached.

LLMCall adds the usage of each model call to the spend the payload carries (`RunContext.spend`), so
IterationGuard decides from the payload alone and no step reads the trace while the run goes on. The
trace is read for spending only when the run ends (its usage) and when a stopped local run is resumed.
"""

from __future__ import annotations

from stepwise.models.budget import BudgetReason
from stepwise.models.run import RunUsage
from stepwise.models.state import RunContext, RunSpend
from stepwise.models.step_record import StepRecord, usage_of_steps
from stepwise.steps.runtime import StepRuntime


def _cost(profile: str, tokens: RunSpend, runtime: StepRuntime) -> float | None:
    """The cost of these tokens at the profile's model prices (the configuration's, else the model
    catalog's), cached tokens at the cache rates, reasoning tokens at the reasoning rate where one is given;
    None when neither has prices."""
    prices = runtime.config.model_prices(profile)
    if prices is None:
        return None
    cost = prices.cost_usd(
        tokens.input_tokens,
        tokens.output_tokens,
        tokens.cache_read_tokens,
        tokens.cache_write_tokens,
        tokens.reasoning_tokens,
    )
    return round(cost, 6)


def priced_usage(profile: str, steps: list[StepRecord], runtime: StepRuntime) -> RunUsage:
    """A run's usage from its trace, with its cost when the profile's model has prices, and the usage of each
    child run its agent calls started (their tokens and calls, their cost at their own models' prices)."""
    usage = usage_of_steps(steps)
    cost = _cost(profile, _tokens_of(usage), runtime)
    usage = usage if cost is None else usage.model_copy(update={"cost_usd": cost})
    for step in steps:
        if step.child_usage is not None:
            usage = usage.plus(step.child_usage)
    return usage


def with_delegated(spend: RunSpend, usages: list[RunUsage]) -> RunSpend:
    """`spend` with what child runs spent added to its delegated part."""
    tokens = spend.delegated_tokens + sum(usage.input_tokens + usage.output_tokens for usage in usages)
    costs = [cost for cost in (spend.delegated_cost_usd, *(usage.cost_usd for usage in usages)) if cost is not None]
    return spend.model_copy(
        update={"delegated_tokens": tokens, "delegated_cost_usd": round(sum(costs), 6) if costs else None}
    )


def _tokens_of(usage: RunUsage) -> RunSpend:
    return RunSpend(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )


def _priced_spend(profile: str, tokens: RunSpend, runtime: StepRuntime) -> RunSpend:
    # the cost of the total, not a sum of rounded costs: the same figure the run's usage reports
    return tokens.model_copy(update={"cost_usd": _cost(profile, tokens, runtime)})


def spend_after(run: RunContext, step: StepRecord | None, runtime: StepRuntime) -> RunSpend:
    """The run's spend once the model call `step` records is added (unchanged when there is no step).

    Reasoning tokens are part of the output tokens: the token budget counts them, the cost prices them.
    """
    if step is None:
        return run.spend
    spent = run.spend
    tokens = RunSpend(
        input_tokens=spent.input_tokens + (step.input_tokens or 0),
        output_tokens=spent.output_tokens + (step.output_tokens or 0),
        cache_read_tokens=spent.cache_read_tokens + (step.cache_read_tokens or 0),
        cache_write_tokens=spent.cache_write_tokens + (step.cache_write_tokens or 0),
        reasoning_tokens=spent.reasoning_tokens + (step.reasoning_tokens or 0),
        delegated_tokens=spent.delegated_tokens,
        delegated_cost_usd=spent.delegated_cost_usd,
    )
    return _priced_spend(run.profile, tokens, runtime)


def spend_before(profile: str, steps: list[StepRecord], iteration: int, runtime: StepRuntime) -> RunSpend:
    """What the run's model calls of the iterations before `iteration` spent (the loop's and the summaries'),
    and its child runs started in them, from its stored trace."""
    spent = [step for step in steps if step.kind in ("llm", "compaction") and step.iteration < iteration]
    usage = usage_of_steps(spent)
    children = [step.child_usage for step in steps if step.child_usage is not None and step.iteration < iteration]
    return with_delegated(_priced_spend(profile, _tokens_of(usage), runtime), children)


def budget_reached(run: RunContext) -> BudgetReason | None:
    """`token_budget` or `cost_budget` once the run has spent its cap, else None."""
    tokens, cost = total_spend(run.spend)
    if run.max_total_tokens is not None and tokens >= run.max_total_tokens:
        return "token_budget"
    if run.max_cost_usd is not None and cost is not None and cost >= run.max_cost_usd:
        return "cost_budget"
    return None


def total_spend(spend: RunSpend) -> tuple[int, float | None]:
    """The tokens and the cost a run has spent, its child runs' included (None: no cost is known)."""
    tokens = spend.input_tokens + spend.output_tokens + spend.delegated_tokens
    costs = [cost for cost in (spend.cost_usd, spend.delegated_cost_usd) if cost is not None]
    return tokens, (round(sum(costs), 6) if costs else None)
