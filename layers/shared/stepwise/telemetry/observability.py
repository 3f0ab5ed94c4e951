"""The one Logger and Metrics of the service (Powertools); every module logs through these.

Prompts, messages and secrets are never logged: log ids, counts, names and timings only. Traces are
OpenTelemetry's (`stepwise.telemetry.spans`), not an X-Ray SDK tracer: AWS's X-Ray SDKs are in
maintenance, and the ADOT Lambda layer records a function's invocation without code here.
"""

from __future__ import annotations

import warnings

from aws_lambda_powertools.logging import Logger

from stepwise.telemetry.log_guard import install_log_guard
from stepwise.telemetry.scoped_emf import InvocationScopedMetrics

SERVICE = "stepwise"

install_log_guard()

logger = Logger(service=SERVICE)
# each local invocation's metrics are its own (`stepwise.telemetry.metric_scopes`)
metrics = InvocationScopedMetrics(namespace="Stepwise", service=SERVICE)

# A step that failed or replayed a stored result has no metric to publish, and that is normal here.
warnings.filterwarnings("ignore", message="No application metrics to publish")
