"""The one Logger, Tracer and Metrics of the service (Powertools); every module logs through these.

Prompts, messages and secrets are never logged: log ids, counts, names and timings only.
"""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics, Tracer

from stepwise.log_guard import install_log_guard

SERVICE = "stepwise"

install_log_guard()

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace="Stepwise", service=SERVICE)

# A step that failed or replayed a stored result has no metric to publish, and that is normal here.
warnings.filterwarnings("ignore", message="No application metrics to publish")
