"""The local runtime runs many invocations at once on threads of one process, where Powertools keeps one set of
metrics: each invocation's metrics must be its own, flushed under its own dimensions, as on Lambda."""

from __future__ import annotations

import json
import sys
import threading
import uuid
from typing import Any

import pytest

from stepwise.local.lambda_runtime import LocalLambdaInvoker
from stepwise.local.template import SamTemplate

from .support import FIXTURES

CALLERS = 8
ROUNDS = 20
ADDS = 5


def test_invocations_at_once_each_publish_their_own_metrics_under_their_own_dimension(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Given EMF metrics on, and a function publishing metrics under a dimension naming its caller
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    template = SamTemplate.load(FIXTURES / "metrics" / "template.yaml")
    invoker = LocalLambdaInvoker(template, module_prefix=f"metrics_{uuid.uuid4().hex[:8]}_")
    failures: list[str] = []
    capfd.readouterr()

    def caller(name: str) -> None:
        for _ in range(ROUNDS):
            try:
                invoker.invoke("MetricsFunction", {"caller": name, "adds": ADDS})
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}")

    # When callers invoke it at once, round after round, switching threads as often as they can
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=caller, args=(f"c{n}",)) for n in range(CALLERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        invoker.close()
    documents = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    # Then every invocation succeeded and printed one line, of its own metrics under its own dimension
    assert failures == []
    assert len(documents) == CALLERS * ROUNDS
    assert {published(each) for each in documents} == {(f"c{n}", "Calls", f"CallsOfc{n}") for n in range(CALLERS)}
    assert {len(document["Calls"]) for document in documents} == {ADDS}


def published(document: dict[str, Any]) -> tuple[str, ...]:
    """The caller an EMF document's dimension names, and the metrics it holds."""
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    return (document.get("caller", "none"), *sorted(metric["Name"] for metric in directive["Metrics"]))
