"""The process's tracer provider, built by the OpenTelemetry SDK from the standard `OTEL_*` variables.

Imported only when spans are on. Nothing is built when a provider is already set (the ADOT Lambda layer's
`/opt/otel-instrument` sets one before the handler is imported), when `OTEL_SDK_DISABLED` is true, or
when only the OpenTelemetry API is installed (spans are then no-ops, as the API specifies).

The building is the SDK's own environment-based configuration, the one `opentelemetry-instrument` and
every distro run: `OTEL_TRACES_EXPORTER` (`console`, `otlp`, any exporter's entry point; with none set,
an `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` alone means `otlp`, as under `opentelemetry-instrument`), the
`OTEL_EXPORTER_OTLP_*` endpoint and headers, `OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_SERVICE_NAME` and
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_PROPAGATORS`, `OTEL_BSP_*`. The SDK exposes it as a configurator class
for distros to subclass (`_OTelSDKConfigurator`, the base of opentelemetry-distro's own); this is such a
subclass, so no exporter, sampler or resource is built by hand here. The one argument it is given binds
the console exporter to `sys.stdout` as it is when tracing starts: the `stepwise` commands point that at
stderr, so spans never mix with a command's results on stdout. An exporter that is not installed (`otlp`
without `stepwise[otel]`'s exporters) or a value the SDK refuses is one warning line, and the process goes
on without exporting: tracing never stops a run.
"""

from __future__ import annotations

import os
import sys
import threading

from opentelemetry import trace

from stepwise.config.settings import otlp_by_endpoint

_LOCK = threading.Lock()
_TRIED: list[bool] = []  # a configuration is tried once per process, so a failure is said once
SERVICE_NAME = "stepwise"


def configure_tracing() -> None:
    """Build the process's tracer provider from the environment, once, unless one is already set. An
    exporter that is not installed or a setting the SDK refuses is one warning line: the process goes on
    without exporting spans (tracing never stops a run)."""
    with _LOCK:
        if _TRIED or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return
        _TRIED.append(True)
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return
        try:
            from opentelemetry.sdk._configuration import _get_exporter_entry_point, _OTelSDKConfigurator
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        except ModuleNotFoundError:
            return

        class _StepwiseConfigurator(_OTelSDKConfigurator):
            """The SDK's environment-based configuration, as a distro runs it."""

        # the service is named unless the environment names it (OTEL_SERVICE_NAME or the resource attributes)
        named = "OTEL_SERVICE_NAME" in os.environ or "service.name=" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        try:
            # `otlp` resolved as the SDK resolves it from OTEL_TRACES_EXPORTER (the OTLP protocol variables)
            by_endpoint = [_get_exporter_entry_point("otlp", "traces")] if otlp_by_endpoint(os.environ) else []
            _StepwiseConfigurator().configure(
                trace_exporter_names=by_endpoint,
                resource_attributes={} if named else {"service.name": SERVICE_NAME},
                exporter_args_map={ConsoleSpanExporter: {"out": sys.stdout}},
            )
        except Exception as exc:  # the SDK raises RuntimeError, ValueError, ImportError... for a bad setting
            _warn_off(exc)


def _warn_off(exc: Exception) -> None:
    from stepwise.telemetry.observability import logger

    reason = " ".join(str(exc).split()) or type(exc).__name__
    logger.warning(
        f"tracing is off: the OTEL_* settings cannot be used ({reason}); install the exporters with "
        "pip install 'stepwise[otel]', or set OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_PROTOCOL to ones installed"
    )
