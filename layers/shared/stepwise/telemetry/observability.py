"""The one Logger, Tracer and Metrics of the service (Powertools); every module logs through these.

Prompts, messages and secrets are never logged: log ids, counts, names and timings only.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

if TYPE_CHECKING:
    from aws_lambda_powertools.tracing import Tracer

from stepwise.telemetry.log_guard import install_log_guard

SERVICE = "stepwise"

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])


class HandlerTracer:
    """Powertools' Tracer for the handlers, built only when in-process tracing is on.

    Building a Tracer loads the X-Ray SDK and its clients (130-200 ms of every cold start) even when
    tracing is disabled; Lambda's and Step Functions' active tracing record the invocations without it.
    So it is built, and a handler wrapped, only when `POWERTOOLS_TRACE_DISABLED` is set to false (the
    template's `InProcessTracing` parameter); otherwise the handler is returned as it is.
    """

    def __init__(self, service: str) -> None:
        self._service = service
        self._tracer: Tracer | None = None

    @property
    def enabled(self) -> bool:
        """True when in-process tracing was asked for (Powertools' own switch, read once per handler)."""
        return not resolve_truthy_env_var_choice(env=os.getenv("POWERTOOLS_TRACE_DISABLED", "true"))

    def capture_lambda_handler(self, handler: HandlerT) -> HandlerT:
        """The handler, traced when in-process tracing is on."""
        if not self.enabled:
            return handler
        if self._tracer is None:
            from aws_lambda_powertools.tracing import Tracer

            self._tracer = Tracer(service=self._service)
        return cast(HandlerT, self._tracer.capture_lambda_handler(handler))


install_log_guard()

logger = Logger(service=SERVICE)
tracer = HandlerTracer(SERVICE)
metrics = Metrics(namespace="Stepwise", service=SERVICE)

# A step that failed or replayed a stored result has no metric to publish, and that is normal here.
warnings.filterwarnings("ignore", message="No application metrics to publish")
