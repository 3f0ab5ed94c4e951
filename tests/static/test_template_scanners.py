"""template.yaml through the deployment scanners: cfn-lint and checkov report nothing left unexplained.

checkov pins boto3 and packaging at versions that conflict with aws-sam-cli and pytest, so it lives in
its own virtualenv, `.venv/static` (`make static` creates it); `CHECKOV` names another executable.
It runs with `--skip-download`, so it never calls the Prisma Cloud API: no network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint_file

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT

TEMPLATE = PROJECT_ROOT / "template.yaml"
DEFAULT_CHECKOV = PROJECT_ROOT / ".venv" / "static" / "bin" / "checkov"
MIN_REASON_LENGTH = 40  # a sentence, not a placeholder such as "n/a" or "accepted"


def checkov_executable() -> Path:
    """The checkov to run: $CHECKOV, else the one `make static` installs, else one on PATH."""
    configured = os.environ.get("CHECKOV")
    if configured:
        return Path(configured)
    if DEFAULT_CHECKOV.is_file():
        return DEFAULT_CHECKOV
    on_path = shutil.which("checkov")
    if on_path is None:
        pytest.fail(f"checkov is not installed: `make static` installs it into {DEFAULT_CHECKOV.parent.parent}")
    return Path(on_path)


@pytest.fixture(scope="module")
def checkov_report() -> dict[str, Any]:
    """checkov's JSON report on template.yaml (CloudFormation and SAM checks)."""
    command = [str(checkov_executable()), "--file", str(TEMPLATE), "--framework", "cloudformation"]
    completed = subprocess.run(
        [*command, "--skip-download", "--output", "json"],
        capture_output=True,
        text=True,
        timeout=600,  # a bound against a hang only: on a busy machine checkov took over 120 s
        check=False,
    )
    # checkov exits 1 when a check fails; the report says which, so the exit code alone is not asserted.
    assert completed.stdout.strip(), f"checkov printed no report: {completed.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def checkov_skips_in_template() -> list[tuple[str, str, Any]]:
    """(resource logical id, check id, comment) for every `Metadata: checkov: skip:` entry."""
    resources = SamTemplate.load(TEMPLATE).document["Resources"]
    return [
        (logical_id, skip.get("id"), skip.get("comment"))
        for logical_id, resource in resources.items()
        for skip in ((resource.get("Metadata") or {}).get("checkov") or {}).get("skip", [])
    ]


def test_cfn_lint_reports_nothing_on_the_template() -> None:
    # Given template.yaml / When cfn-lint checks it with its default rules
    matches = lint_file(TEMPLATE)
    # Then it reports no error, warning or informational finding
    assert [str(match) for match in matches] == []


def test_checkov_finds_no_failing_check_on_the_template(checkov_report: dict[str, Any]) -> None:
    # Given / When checkov has scanned template.yaml
    results = checkov_report["results"]
    failures = [
        f"{check['check_id']} on {check['resource']}: {check['check_name']}" for check in results["failed_checks"]
    ]
    # Then it could parse every resource and every finding is fixed or skipped in the template
    assert checkov_report["summary"]["parsing_errors"] == 0
    assert checkov_report["summary"]["resource_count"] > 0
    assert failures == []


def test_every_checkov_skip_in_the_template_gives_a_written_reason() -> None:
    # Given every checkov skip declared in the template's Metadata
    skips = checkov_skips_in_template()
    # When / Then each names a check and says why in a sentence
    assert skips
    for logical_id, check_id, comment in skips:
        assert isinstance(check_id, str) and check_id.startswith("CKV"), f"{logical_id}: skip without a check id"
        assert isinstance(comment, str) and len(comment.strip()) >= MIN_REASON_LENGTH, f"{logical_id} {check_id}"


def test_every_checkov_skip_in_the_template_suppresses_a_finding_checkov_reports(
    checkov_report: dict[str, Any],
) -> None:
    # Given the checks checkov reported as skipped, by resource
    skipped = {
        (check["resource"].rsplit(".", 1)[-1], check["check_id"])
        for check in checkov_report["results"]["skipped_checks"]
    }
    # When / Then every skip in the template matches one, so none is stale or misspelt
    declared = {(logical_id, check_id) for logical_id, check_id, _ in checkov_skips_in_template()}
    assert declared - skipped == set()
