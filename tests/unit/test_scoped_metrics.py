"""The service's metrics provider: an invocation's metrics are its own while others are open beside it, and a
metric added outside any invocation is the process's, as on Lambda."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from typing import Any

import pytest

from stepwise.telemetry.metric_scopes import invocation_metrics
from stepwise.telemetry.observability import metrics as service_metrics
from stepwise.telemetry.scoped_emf import InvocationScopedMetrics


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> Iterator[InvocationScopedMetrics]:
    """The service's metrics, with EMF output on; what the process's set holds is dropped after the test."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    yield service_metrics
    service_metrics.clear_metrics()


def emf_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def test_an_invocations_flush_prints_its_own_metrics_only_while_another_is_open(
    metrics: InvocationScopedMetrics, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two invocations open at once, each in its own context, each with a metric under its own dimension
    contexts = {caller: contextvars.copy_context() for caller in ("a", "b")}
    scopes = {caller: invocation_metrics() for caller in contexts}
    for caller, context in contexts.items():
        context.run(scopes[caller].__enter__)
        context.run(metrics.add_dimensions, caller=caller)
        context.run(metrics.add_metric, name=f"CallsOf{caller}", unit="Count", value=1)
    # When the second flushes, then the first, each before its scope ends
    for caller in ("b", "a"):
        contexts[caller].run(metrics.flush_metrics)
        contexts[caller].run(scopes[caller].__exit__, None, None, None)
    # Then each printed one line: its own metric under its own dimension
    printed = [
        (line["caller"], sorted(key for key in line if key.startswith("CallsOf")))
        for line in emf_lines(capsys.readouterr().out)
    ]
    assert printed == [("b", ["CallsOfb"]), ("a", ["CallsOfa"])]


def test_a_metric_outside_any_invocation_is_the_processs_and_no_invocation_flushes_it(
    metrics: InvocationScopedMetrics, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a metric added outside any invocation
    metrics.add_metric(name="Outside", unit="Count", value=1)
    # When an invocation that added none flushes, then the process
    with invocation_metrics():
        metrics.flush_metrics()
    by_the_invocation = emf_lines(capsys.readouterr().out)
    metrics.flush_metrics()
    by_the_process = emf_lines(capsys.readouterr().out)
    # Then the invocation printed nothing, and the process printed it
    assert by_the_invocation == []
    assert [line["Outside"] for line in by_the_process] == [[1.0]]
