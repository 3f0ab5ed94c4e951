"""The service's metrics provider: each call goes to the CloudWatch EMF provider of the invocation in scope
(`metric_scopes`), else to the process's.

Built on Powertools' public provider interface (`BaseProvider`, whose `log_metrics` decorator flushes through
this class at the end of each call) and on `EphemeralMetrics`, its EMF provider whose instances share no state:
one per invocation. Powertools has no scope of its own finer than a `Metrics` instance, and every module
publishes through the one `metrics` it imports, so the choice of instance is made here, per call.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import EphemeralMetrics
from aws_lambda_powertools.metrics.provider import BaseProvider

from stepwise.telemetry.metric_scopes import current_invocation

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf.types import CloudWatchEMFOutput


class InvocationScopedMetrics(BaseProvider):
    """Adds, flushes and clears the metrics of the invocation in scope (`invocation_metrics`), else those of the
    process; every invocation's provider has the process's namespace and service."""

    def __init__(self, *, namespace: str, service: str) -> None:
        self._namespace, self._service = namespace, service
        self._process = self._new_provider()
        # Powertools prints an EMF line and its end in two writes: two invocations flushing at once on threads
        # ran their lines together
        self._printing = threading.Lock()

    def _new_provider(self) -> EphemeralMetrics:
        return EphemeralMetrics(namespace=self._namespace, service=self._service)

    def provider(self) -> EphemeralMetrics:
        """The provider metrics go to now: the invocation's in scope, else the process's."""
        scope = current_invocation()
        return self._process if scope is None else scope.provider_or(self._new_provider)

    def add_metric(self, name: str, unit: str, value: float, resolution: int = 60) -> None:
        """Add a metric to the invocation's set."""
        self.provider().add_metric(name=name, unit=unit, value=value, resolution=resolution)

    def add_dimensions(self, **dimensions: str) -> None:
        """Add a set of dimensions to the invocation's metrics."""
        self.provider().add_dimensions(**dimensions)

    def serialize_metric_set(self, *args: Any, **kwargs: Any) -> CloudWatchEMFOutput:
        """The invocation's metrics as an EMF document."""
        return self.provider().serialize_metric_set(*args, **kwargs)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        """Print the invocation's metrics as one EMF line, and clear them."""
        provider = self.provider()
        with self._printing:
            provider.flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)

    def clear_metrics(self) -> None:
        """Drop the invocation's metrics."""
        self.provider().clear_metrics()

    def add_cold_start_metric(self, context: Any) -> None:
        """Add the cold-start metric to the invocation's set."""
        self.provider().add_cold_start_metric(context)
