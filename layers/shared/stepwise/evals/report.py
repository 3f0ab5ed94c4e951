"""A suite's report for people (a table), for CI (JUnit XML) and for programs (JSON).

The table is drawn by `rich`; the JUnit XML is built with the standard library's ElementTree in the shape
JUnit readers (Jenkins, GitLab, GitHub actions, `junitparser`) take: `<testsuites>` holding one
`<testsuite>` with one `<testcase>` per case, a `<failure>` in each case that did not pass.

An answer or a check's reason may quote a secret the run saw; every report is written from the report with
the known secrets redacted from its strings (`redacted`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, TextIO

from stepwise.config.redaction import redact_strings
from stepwise.evals.runner import CaseReport, SuiteReport

_TABLE_WIDTH = 140


def _cost(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def redacted(report: SuiteReport) -> SuiteReport:
    """`report` with the secrets this process knows replaced in every string (itself when it holds none)."""
    data = report.model_dump()
    cleaned = redact_strings(data)
    return report if cleaned is data else SuiteReport.model_validate(cleaned)


def print_table(report: SuiteReport, out: TextIO) -> None:
    """Per case: passes of k, pass@k, pass^k, mean tokens, cost and seconds, then each failed check's first
    failure; a last line with the totals."""
    report = redacted(report)
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=None if out.isatty() else _TABLE_WIDTH, highlight=False, soft_wrap=False)
    k_values = {case.runs for case in report.cases}
    k = str(k_values.pop()) if len(k_values) == 1 else "k"
    table = Table(title=f"suite {report.suite}", title_justify="left", show_edge=False)
    for column, justify in (
        ("case", "left"),
        ("passes", "right"),
        (f"pass@{k}", "center"),
        (f"pass^{k}", "center"),
        ("tokens", "right"),
        ("cost USD", "right"),
        ("seconds", "right"),
        ("first failure", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for case in report.cases:
        table.add_row(
            ("" if case.passed else "FAIL ") + case.id,
            f"{case.passes}/{case.runs}",
            _mark(case.pass_at_k),
            _mark(case.pass_hat_k),
            f"{case.mean_tokens:.0f}",
            _cost(case.mean_cost_usd),
            f"{case.mean_seconds:.2f}",
            case.first_failure or "",
        )
    console.print(table)
    for case in report.cases:
        failed = [summary for summary in case.checks if summary.first_failure is not None]
        for summary in failed:
            console.print(
                f"  {case.id}: {summary.check}: {summary.passes}/{summary.runs} passed; {summary.first_failure}"
            )
    passed = sum(1 for case in report.cases if case.passed)
    rule = "pass^k" if report.require == "all" else "pass@k"
    console.print(f"{passed} passed, {len(report.cases) - passed} failed ({rule} per case)")


def _mark(value: bool) -> str:
    return "yes" if value else "no"


def report_document(report: SuiteReport) -> dict[str, Any]:
    """The report as JSON data: every case, its verdicts, checks and attempts (with their run ids)."""
    report = redacted(report)
    document = report.model_dump(mode="json")
    for case, data in zip(report.cases, document["cases"], strict=True):
        data["first_failure"] = case.first_failure
        for attempt, attempt_data in zip(case.attempts, data["attempts"], strict=True):
            attempt_data["passed"] = attempt.passed
    document["summary"] = {
        "cases": len(report.cases),
        "passed": sum(1 for case in report.cases if case.passed),
        "failed": sum(1 for case in report.cases if not case.passed),
    }
    return document


def write_json(report: SuiteReport, path: Path) -> None:
    """Write the JSON report to `path`."""
    path.write_text(json.dumps(report_document(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _failure_text(case: CaseReport) -> str:
    lines: list[str] = []
    for attempt in case.attempts:
        if attempt.failure is not None:
            lines.append(f"run {attempt.number}: not run: {attempt.failure}")
        for check in attempt.checks:
            if not check.passed:
                lines.append(f"run {attempt.number}: {check.check}: {check.reason}")
    return "\n".join(lines)


def junit_xml(report: SuiteReport) -> ElementTree.ElementTree:
    """The report as a JUnit XML document."""
    report = redacted(report)
    failures = sum(1 for case in report.cases if not case.passed)
    seconds = sum(case.mean_seconds * case.runs for case in report.cases)
    root = ElementTree.Element(
        "testsuites",
        name=report.suite,
        tests=str(len(report.cases)),
        failures=str(failures),
        errors="0",
        time=f"{seconds:.3f}",
    )
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        name=report.suite,
        tests=str(len(report.cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{seconds:.3f}",
    )
    for case in report.cases:
        element = ElementTree.SubElement(
            suite, "testcase", name=case.id, classname=report.suite, time=f"{case.mean_seconds * case.runs:.3f}"
        )
        if not case.passed:
            failure = ElementTree.SubElement(
                element, "failure", message=case.first_failure or "failed", type="EvalCheckFailed"
            )
            failure.text = _failure_text(case)
        # What readers show beside the verdict: JUnit's schema has no per-case properties, so it is output.
        output = ElementTree.SubElement(element, "system-out")
        run_ids = " ".join(attempt.outcome.run_id for attempt in case.attempts if attempt.outcome is not None)
        output.text = (
            f"passes {case.passes}/{case.runs} · pass@k {_mark(case.pass_at_k)} · pass^k {_mark(case.pass_hat_k)} · "
            f"mean tokens {case.mean_tokens:.0f} · runs {run_ids}"
        )
    return ElementTree.ElementTree(root)


def write_junit(report: SuiteReport, path: Path) -> None:
    """Write the JUnit XML report to `path`."""
    document = junit_xml(report)
    ElementTree.indent(document)
    document.write(path, encoding="utf-8", xml_declaration=True)
