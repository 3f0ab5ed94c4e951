"""Stored runs become cases (`stepwise eval SUITE --from-runs`): each case replays one run — its question,
its recorded tool answers — and checks the new answer against the recorded one, exactly or by a rubric."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml

from stepwise.models.run import RunMeta

Comparison = Literal["exact", "rubric"]


def case_from_run(meta: RunMeta, comparison: Comparison) -> dict[str, Any]:
    """The case that replays `meta` and expects its recorded answer (its stop reason too, when exact)."""
    expect: dict[str, Any]
    if comparison == "exact":
        expect = {"answer_equals": meta.answer or "", "stop_reason": meta.stop_reason}
    else:
        expect = {
            "rubric": "The answer gives the same facts and recommendation as this recorded answer, in any words: "
            + (meta.answer or "")
        }
    return {"id": f"run-{meta.run_id}", "replay": {"run_id": meta.run_id}, "expect": expect}


def suite_from_runs(name: str, runs: list[RunMeta], comparison: Comparison, judge: str | None) -> dict[str, Any]:
    """A suite document with one replay case per run that ended with an answer."""
    cases = [case_from_run(meta, comparison) for meta in runs if meta.is_terminal and meta.answer is not None]
    document: dict[str, Any] = {"name": name, "cases": cases}
    if judge is not None:
        document["judge"] = judge
    return document


def write_suite(document: dict[str, Any], path: Path) -> None:
    """Write the suite as YAML (stored text kept as it is, in block style)."""
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
