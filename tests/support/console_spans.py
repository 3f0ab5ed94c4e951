"""The spans OpenTelemetry's console exporter printed (`OTEL_TRACES_EXPORTER=console`), read back from a
process's output, where they sit among log lines as indented JSON objects."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PrintedSpan:
    """One exported span: its name, kind, ids (hex, as the exporter prints them) and attributes."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    resource: dict[str, Any]


def printed_spans(output: str) -> list[PrintedSpan]:
    """Every span the console exporter printed in `output`, in the order printed."""
    decoder = json.JSONDecoder()
    spans: list[PrintedSpan] = []
    position = output.find("{")
    while position >= 0:
        try:
            document, end = decoder.raw_decode(output, position)
        except ValueError:
            position = output.find("{", position + 1)
            continue
        if isinstance(document, dict) and {"name", "context", "parent_id", "attributes"} <= set(document):
            spans.append(
                PrintedSpan(
                    name=document["name"],
                    kind=document["kind"],
                    trace_id=document["context"]["trace_id"],
                    span_id=document["context"]["span_id"],
                    parent_id=document["parent_id"],
                    attributes=document["attributes"],
                    resource=document.get("resource", {}).get("attributes", {}),
                )
            )
        position = output.find("{", end)
    return spans
