"""The CloudWatch EMF metrics in a process's output, read as CloudWatch reads them."""

from __future__ import annotations

import json

# (name, value, dimensions) of one published metric value
Metric = tuple[str, float, dict[str, str]]


def emitted(output: str) -> list[Metric]:
    """(name, value, dimensions) of every metric in the EMF documents of `output`, one per dimension set."""
    found: list[Metric] = []
    for line in output.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if not isinstance(document, dict) or "_aws" not in document:
            continue
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for dimension_set in directive["Dimensions"]:
                dimensions = {name: document[name] for name in dimension_set}
                for metric in directive["Metrics"]:
                    values = document[metric["Name"]]
                    for value in values if isinstance(values, list) else [values]:
                        found.append((metric["Name"], value, dimensions))
    return found


def total(metrics: list[Metric], name: str, **dimensions: str) -> float:
    """The sum of a metric in the dimension set that is exactly `dimensions` (`service` alone by default)."""
    wanted = dimensions or {"service": "stepwise"}
    return sum(value for metric, value, found in metrics if metric == name and found == wanted)
