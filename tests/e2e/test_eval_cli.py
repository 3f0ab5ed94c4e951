"""`stepwise eval` as CI runs it: a suite over the demo's tools through the real state machine, its verdicts
per check, the JUnit XML a JUnit reader takes, the JSON report and the exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import Failure, JUnitXml

from stepwise.cli import main
from tests.conftest import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "evals"
SUITE = FIXTURES / "suite.yaml"
CONFIG = FIXTURES / "agent.yaml"

# Every check of tests/fixtures/evals/suite.yaml and whether the scripted agent passes it.
EXPECTED_VERDICTS: dict[str, dict[str, bool]] = {
    "paris-weather": {
        'answer_contains "Paris"': True,
        'answer_contains "14 °C"': True,
        'tool_called get_weather {"city": "Paris"}': True,
        "tool_not_called convert_currency": True,
        "max_iterations 2": True,
        "stop_reason final_answer": True,
    },
    "london-weather": {
        'answer_contains "overcast"': False,
        'tool_called get_weather {"city": "London"}': False,
    },
    "euros-to-dollars": {
        "answer_matches": True,
        "tool_order": True,
        'tool_called convert_currency {"amount": 100, "from": "EUR"}': True,
    },
    "pounds-to-euros": {"tool_called convert_currency": False, "tool_not_called get_weather": False},
    "split-the-bill": {
        'answer_contains "61.50"': True,
        'tool_called calculator {"expression": "184.50 / 3"}': True,
        "max_tokens 5000": True,
    },
    "never-answers": {"max_iterations 2": False, "stop_reason final_answer": False},
    "tokyo-as-json": {"answer_schema": True, "output_equals raining": True, "output_equals condition": True},
    "umbrella-advice": {"rubric": True},
    "packing-advice": {"rubric": False},
    "order-of-calls": {"tool_order": False, "answer_equals": True},
}


@pytest.fixture
def store_options(dynamodb_local: str, unique_table_name: str) -> list[str]:
    """The CLI options that point a command at the session's DynamoDB Local, in a table of the test's own."""
    return ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]


def run_eval(suite: Path, *options: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["eval", str(suite), "--config", str(CONFIG), "--example-api", *options], out=out)
    return code, out.getvalue()


def write_suite(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"name": path.stem, "cases": cases}), encoding="utf-8")
    return path


def suite_cases(*ids: str) -> list[dict[str, Any]]:
    """The cases of the fixture suite with these ids."""
    cases = yaml.safe_load(SUITE.read_text(encoding="utf-8"))["cases"]
    return [case for case in cases if case["id"] in ids]


def test_a_suite_gives_each_check_its_verdict_junit_xml_and_exit_1_when_a_case_fails(
    tmp_path: Path, store_options: list[str]
) -> None:
    # Given the ten-case suite, whose scripted agent is right on five cases and wrong on five
    report_path, junit_path = tmp_path / "report.json", tmp_path / "junit.xml"
    # When it is run with JSON and JUnit reports
    code, table = run_eval(SUITE, "--json", str(report_path), "--junit", str(junit_path), *store_options)
    # Then the command fails, as five cases did
    assert code == 1
    # And every check has the verdict the script earns it
    report = json.loads(report_path.read_text(encoding="utf-8"))
    verdicts = {
        case["id"]: {check["check"]: check["passes"] == check["runs"] for check in case["checks"]}
        for case in report["cases"]
    }
    assert verdicts == EXPECTED_VERDICTS
    assert report["summary"] == {"cases": 10, "passed": 5, "failed": 5}
    # And the judge's reason is recorded with its verdict
    packing = next(case for case in report["cases"] if case["id"] == "packing-advice")
    assert packing["attempts"][0]["checks"][0]["reason"] == "It does not fit the weather it reports."
    # And a JUnit reader finds ten test cases, the five failed ones with their first failure
    suite = next(iter(JUnitXml.fromfile(str(junit_path))))
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("travel", 10, 5, 0)
    failed = {
        case.name: case.result[0].message for case in suite if case.result and isinstance(case.result[0], Failure)
    }
    assert set(failed) == {"london-weather", "pounds-to-euros", "never-answers", "packing-advice", "order-of-calls"}
    assert "4 iterations, over 2" in failed["never-answers"]
    # And the table names each failed case and the totals
    assert "FAIL london-weather" in table and "5 passed, 5 failed" in table


def test_runs_3_reports_passes_of_3_and_pass_hat_3(tmp_path: Path, store_options: list[str]) -> None:
    # Given a suite of one case the agent always gets right and one it always gets wrong
    suite = write_suite(tmp_path / "two.yaml", suite_cases("paris-weather", "london-weather"))
    report_path = tmp_path / "report.json"
    # When each case runs three times
    code, table = run_eval(suite, "--runs", "3", "--json", str(report_path), *store_options)
    # Then each case reports its passes of 3, pass@3 and pass^3
    cases = {case["id"]: case for case in json.loads(report_path.read_text(encoding="utf-8"))["cases"]}
    summary = {
        name: (case["passes"], case["runs"], case["pass_at_k"], case["pass_hat_k"]) for name, case in cases.items()
    }
    assert summary == {"paris-weather": (3, 3, True, True), "london-weather": (0, 3, False, False)}
    assert "pass^3" in table and "3/3" in table and "0/3" in table
    # And every attempt is a run of its own
    assert len({attempt["outcome"]["run_id"] for case in cases.values() for attempt in case["attempts"]}) == 6
    assert code == 1


def test_a_jsonl_suite_whose_cases_all_pass_exits_0(tmp_path: Path, store_options: list[str]) -> None:
    # Given the passing cases as JSONL, one case a line
    suite = tmp_path / "passing.jsonl"
    lines = [json.dumps(case) for case in suite_cases("paris-weather", "split-the-bill", "tokyo-as-json")]
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # When it is run
    code, table = run_eval(suite, *store_options)
    # Then it passes
    assert code == 0
    assert "3 passed, 0 failed" in table


@pytest.mark.parametrize(
    ("cases", "named"),
    [
        ([{"input": "Weather in Paris?"}], "cases[0].id: Field required"),
        ([{"id": "a", "input": "x", "expect": {"answer_matches": "("}}], "cases[0] (id a).expect.answer_matches"),
        ([{"id": "a", "input": "x", "expect": {"stop_reason": "done"}}], "cases[0] (id a).expect.stop_reason"),
        ([{"id": "a", "input": "x", "expect": {"answer_containz": "x"}}], "expect.answer_containz: Extra inputs"),
        ([{"id": "a", "input": "x"}, {"id": "a", "input": "y"}], "cases: the id 'a' is used by more than one case"),
    ],
)
def test_a_bad_suite_exits_2_naming_the_case_field_and_reason(
    tmp_path: Path, cases: list[dict[str, Any]], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a suite with a mistake
    suite = write_suite(tmp_path / "bad.yaml", cases)
    # When it is run
    code = main(["eval", str(suite), "--config", str(CONFIG)], out=io.StringIO())
    # Then nothing runs: exit 2, one line naming where and why
    error = capsys.readouterr().err
    assert code == 2
    assert named in error and error.count("\n") == 1


def test_a_rubric_without_a_judge_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a case graded by a rubric, and neither the suite nor the command naming a judge model
    suite = write_suite(tmp_path / "rubric.yaml", [{"id": "a", "input": "x", "expect": {"rubric": "Polite."}}])
    # When it is run
    code = main(["eval", str(suite), "--config", str(CONFIG)], out=io.StringIO())
    # Then it is refused before any run
    assert code == 2
    assert "name the model that grades it" in capsys.readouterr().err


def test_stored_runs_become_replay_cases_that_pass_as_recorded_and_fail_under_a_changed_agent(
    tmp_path: Path, store_options: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stored run of the agent
    from stepwise.local.example_api import ExampleToolApi

    with ExampleToolApi() as api:
        monkeypatch.setenv("STEPWISE_EXAMPLE_API_URL", api.url)
        out = io.StringIO()
        assert (
            main(["run", "What is the weather in Paris?", "--config", str(CONFIG), "--json", *store_options], out=out)
            == 0
        )
    run = json.loads(out.getvalue())
    suite = tmp_path / "recorded.yaml"
    # When a suite is written from it
    assert main(["eval", str(suite), "--config", str(CONFIG), "--from-runs", run["run_id"], *store_options]) == 0
    # Then its case replays the run and expects the recorded answer
    case = yaml.safe_load(suite.read_text(encoding="utf-8"))["cases"][0]
    assert case["replay"] == {"run_id": run["run_id"]}
    assert case["expect"] == {"answer_equals": run["answer"], "stop_reason": "final_answer"}
    # And replayed under the same agent it passes, under the changed one it fails
    assert run_eval(suite, *store_options)[0] == 0
    code, table = run_eval(suite, "--profile", "v2", *store_options)
    assert code == 1 and "answer_equals" in table
