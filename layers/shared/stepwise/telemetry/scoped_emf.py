"""Powertools' CloudWatch EMF provider, its metrics those of the invocation in scope (`metric_scopes`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from stepwise.telemetry.metric_scopes import MetricSets, current_invocation


def _scoped(name: str) -> Any:
    """The provider's attribute `name`, read and written in the sets of the invocation in scope."""

    def read(provider: InvocationScopedEMFProvider) -> Any:
        return getattr(provider.sets(), name)

    def write(provider: InvocationScopedEMFProvider, value: Any) -> None:
        setattr(provider.sets(), name, value)

    return property(read, write)


class InvocationScopedEMFProvider(AmazonCloudWatchEMFProvider):
    """Adds, flushes and clears the metrics of the invocation in scope (`invocation_metrics`), else those of
    the process; namespace, service and default dimensions stay the process's."""

    metric_set = _scoped("metric_set")
    dimension_set = _scoped("dimension_set")
    dimension_sets = _scoped("dimension_sets")
    metadata_set = _scoped("metadata_set")
    timestamp = _scoped("timestamp")

    def __init__(self, **options: Any) -> None:
        # before Powertools' own initialisation, which sets the attributes above
        self._process = MetricSets()
        super().__init__(**options)

    def sets(self) -> MetricSets:
        """The sets metrics go to now: the invocation's in scope, else the process's."""
        return current_invocation() or self._process

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        """Powertools' flush, with the EMF line written in one piece: `print` writes a line and its end apart, and
        two invocations flushing at once on threads ran their lines together."""
        if not self.metric_set and not raise_on_empty_metrics:
            super().flush_metrics(raise_on_empty_metrics)  # says there is nothing to publish
            return
        if is_metrics_disabled():
            return
        line = json.dumps(self.serialize_metric_set(), separators=(",", ":"))
        sys.stdout.write(line + "\n")
        self.clear_metrics()
