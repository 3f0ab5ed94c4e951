"""The metrics a run publishes when it ends, by status and stop reason (Powertools EMF).

Each is published twice: over all runs (dimension `service`) and per outcome (dimensions `status` and
`stop_reason`), through a second dimension set on the ending invocation.
"""

from __future__ import annotations

from stepwise.models.run import RunUsage
from stepwise.telemetry.observability import metrics


def record_run_ended(status: str, stop_reason: str | None, usage: RunUsage, iterations: int) -> None:
    """Count the run under its outcome, with what it spent: tokens, iterations and cost when priced."""
    metrics.add_dimensions(status=status, stop_reason=stop_reason or "none")
    metrics.add_metric(name="Runs", unit="Count", value=1)
    metrics.add_metric(name="RunIterations", unit="Count", value=iterations)
    metrics.add_metric(name="RunInputTokens", unit="Count", value=usage.input_tokens)
    metrics.add_metric(name="RunOutputTokens", unit="Count", value=usage.output_tokens)
    if usage.reasoning_tokens:
        metrics.add_metric(name="RunReasoningTokens", unit="Count", value=usage.reasoning_tokens)
    if usage.compactions:
        metrics.add_metric(name="RunCompactions", unit="Count", value=usage.compactions)
    if usage.cost_usd is not None:
        # CloudWatch has no currency unit: the value is US dollars
        metrics.add_metric(name="RunCostUSD", unit="None", value=usage.cost_usd)
