"""An eval report holds no secret the process knows, in any of its forms (table, JSON, JUnit XML)."""

from __future__ import annotations

import io
import json

from stepwise.config.redaction import Redactor
from stepwise.evals.checks import CheckResult
from stepwise.evals.outcome import RunOutcome
from stepwise.evals.report import junit_xml, print_table, redacted, report_document
from stepwise.evals.runner import Attempt, CaseReport, CheckSummary, SuiteReport

SECRET = "sk-live-Ew5Rt8Yu2Io6Pa9Sd3"


def report_quoting(text: str) -> SuiteReport:
    """A one-case report whose failed attempt's answer and check reason quote `text`."""
    reason = f"the answer {text!r} does not contain 'Paris'"
    outcome = RunOutcome(run_id="0123456789abcdef0123456789abcdef", status="SUCCEEDED", answer=text)
    attempt = Attempt(
        number=1, outcome=outcome, checks=[CheckResult(check="answer_contains", passed=False, reason=reason)]
    )
    case = CaseReport(
        id="key",
        runs=1,
        passes=0,
        pass_at_k=False,
        pass_hat_k=False,
        passed=False,
        mean_tokens=10,
        mean_cost_usd=None,
        mean_seconds=0.5,
        checks=[CheckSummary(check="answer_contains", passes=0, runs=1, first_failure=reason)],
        attempts=[attempt],
    )
    return SuiteReport(suite="canary", require="all", passed=False, cases=[case])


def test_every_form_of_a_report_has_a_quoted_secret_redacted() -> None:
    # Given a process that knows a secret, and a report whose answer and check reason quote it
    known = Redactor([SECRET])
    report = report_quoting(f"The key is {SECRET}.")

    # When the report is written as a table, JSON and JUnit XML
    table = io.StringIO()
    print_table(report, table)
    document = json.dumps(report_document(report))
    xml = io.StringIO()
    junit_xml(report).write(xml, encoding="unicode")

    # Then none holds any form of the secret, and each says where it was
    written = (table.getvalue(), document, xml.getvalue())
    assert [known.redact(text) == text for text in written] == [True, True, True]
    assert ["The key is ***." in text for text in written] == [True, True, True]


def test_a_report_without_a_secret_is_written_from_itself() -> None:
    # Given a process that knows a secret, and a report that does not quote it
    known = Redactor([SECRET])
    report = report_quoting("It drizzles in Paris.")

    # When it is redacted, then it is the very same report
    assert (redacted(report) is report, len(known) > 0) == (True, True)
