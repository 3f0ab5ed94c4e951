"""Online evals: a profile's checks applied to its runs as they end, through the real state machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.steps.online_eval import evaluate_run
from tests.e2e.conftest import ConfigWriter, react_answer
from tests.support.emf_metrics import emitted, total

ANSWERING = {"provider": "scripted", "scenarios": [{"turns": [react_answer("Paris is the capital of France.")]}]}


def _with_judge(config_dir: Path, verdict: dict[str, Any]) -> Path:
    """The configuration in `config_dir` with a scripted `judge` model that replies `verdict`."""
    path = config_dir / "stepwise.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["models"]["judge"] = {"provider": "scripted", "scenarios": [{"turns": [{"content": json.dumps(verdict)}]}]}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return config_dir


def test_every_sampled_run_that_ends_carries_its_eval_result_and_is_counted(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Given a profile that evaluates every run for "Paris"
    config = write_config(ANSWERING, online_evals={"sample": 1.0, "expect": {"answer_contains": "Paris"}})
    environment, listener = local_run(config)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    capfd.readouterr()
    # When two runs end
    first, _ = environment.ask("What is the capital of France?")
    second, _ = environment.ask("And the capital of France, again?")
    metrics = emitted(capfd.readouterr().out)
    # Then each carries a passed eval with its check's verdict, counted once per run, after Format
    for meta in (first, second):
        assert meta.status == "SUCCEEDED"
        assert meta.online_eval is not None and meta.online_eval.verdict == "passed"
        assert [(check.check, check.passed) for check in meta.online_eval.checks] == [('answer_contains "Paris"', True)]
    assert listener.entered().count("OnlineEval") == 2
    assert total(metrics, "OnlineEvalPassed") == 2
    assert total(metrics, "OnlineEvalPassed", profile="default") == 2


def test_a_failing_check_is_recorded_failed_and_the_run_still_succeeds(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile whose check the answer cannot pass
    config = write_config(ANSWERING, online_evals={"sample": 1.0, "expect": {"answer_contains": "Berlin"}})
    environment, _ = local_run(config)
    # When a run ends
    meta, _ = environment.ask("What is the capital of France?")
    # Then the eval failed, says why, and the run's outcome is the one Format recorded
    assert (meta.status, meta.stop_reason, meta.outcome) == ("SUCCEEDED", "final_answer", "answered")
    assert meta.online_eval is not None and meta.online_eval.verdict == "failed"
    assert "does not contain" in (meta.online_eval.checks[0].reason or "")


def test_a_sample_of_zero_never_evaluates(write_config: ConfigWriter, local_run: Callable[..., Any]) -> None:
    # Given a profile with online evals on none of its runs
    config = write_config(ANSWERING, online_evals={"sample": 0, "expect": {"answer_contains": "Paris"}})
    environment, listener = local_run(config)
    # When a run ends
    meta, _ = environment.ask("What is the capital of France?")
    # Then no eval ran and none is stored
    assert meta.status == "SUCCEEDED" and meta.online_eval is None
    assert "OnlineEval" not in listener.entered()


def test_a_judge_grades_the_rubric_and_its_reason_is_kept(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile graded by a scripted judge that fails the answer
    online = {"sample": 1.0, "expect": {"answer_contains": "Paris"}, "judge": "judge", "rubric": "Cites a source."}
    config = _with_judge(write_config(ANSWERING, online_evals=online), {"pass": False, "reason": "no source given"})
    environment, _ = local_run(config)
    # When a run ends
    meta, _ = environment.ask("What is the capital of France?")
    # Then the check passed, the judge failed it with its reason, and the run succeeded
    assert meta.status == "SUCCEEDED" and meta.online_eval is not None
    assert meta.online_eval.verdict == "failed"
    assert meta.online_eval.checks[0].passed
    judge = meta.online_eval.judge
    assert judge is not None and (judge.model, judge.passed, judge.reason) == ("judge", False, "no source given")


def test_a_judge_that_cannot_grade_is_recorded_as_an_error_and_the_run_is_unchanged(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile whose judge fails every call (its only scenario never matches)
    online = {"sample": 1.0, "expect": {"answer_contains": "Paris"}, "judge": "judge", "rubric": "Cites a source."}
    config = _with_judge(write_config(ANSWERING, online_evals=online), {"pass": True, "reason": "unused"})
    path = config / "stepwise.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["models"]["judge"]["scenarios"][0]["match"] = "^never$"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    environment, _ = local_run(config)
    # When a run ends
    meta, _ = environment.ask("What is the capital of France?")
    # Then the eval is an error naming the judge's failure, with the checks it made, and the run succeeded
    assert (meta.status, meta.outcome) == ("SUCCEEDED", "answered")
    assert meta.online_eval is not None and meta.online_eval.verdict == "error"
    assert meta.online_eval.error == "the judge could not grade: LLMPermanentError"
    assert [check.passed for check in meta.online_eval.checks] == [True]


def test_a_run_that_failed_is_evaluated_and_its_execution_still_fails(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile evaluated online whose model fails every call
    failing = {"provider": "scripted", "scenarios": [{"match": "^never$", "turns": [react_answer("x")]}]}
    config = write_config(failing, online_evals={"sample": 1.0, "expect": {"status": "SUCCEEDED"}})
    environment, listener = local_run(config)
    # When a run ends FAILED through FormatFailure
    meta, _ = environment.ask("What is the capital of France?")
    # Then its eval is recorded failed, and the execution ends in Failed as before
    assert meta.status == "FAILED"
    assert meta.online_eval is not None and meta.online_eval.verdict == "failed"
    assert meta.online_eval.checks[0].reason == "the status is FAILED"
    assert listener.entered()[-3:] == ["EvaluateOnlineAfterFailure", "OnlineEvalAfterFailure", "Failed"]


def test_a_repeated_eval_of_a_run_keeps_the_first_result(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a run that ended and was evaluated
    config = write_config(ANSWERING, online_evals={"sample": 1.0, "expect": {"answer_contains": "Paris"}})
    environment, _ = local_run(config)
    meta, _ = environment.ask("What is the capital of France?")
    # When the eval is invoked again, as a retried OnlineEval state would
    repeated = evaluate_run(meta.run_id, environment.runtime)
    # Then it does nothing: the stored result is the first one
    assert repeated is None
    assert environment.runtime.store.require_run(meta.run_id).online_eval == meta.online_eval
