"""A profile's `online_evals`: validated where the configuration is read, each mistake naming its field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepwise.config.online_evals import sampled
from tests.unit.config.test_config_check import check, write

SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}


def with_online_evals(online_evals: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"m": SCRIPTED}, "profiles": {"default": {"model": "m", "online_evals": online_evals}}}


@pytest.mark.parametrize(
    ("online_evals", "expected"),
    [
        pytest.param(
            {"sample": 1.5, "expect": {"answer_contains": "x"}},
            "profiles.default.online_evals.sample: Input should be less than or equal to 1",
            id="a sample over 1",
        ),
        pytest.param(
            {"sample": 0.5, "expect": {"answer_has": "x"}},
            "profiles.default.online_evals.expect.answer_has: Extra inputs are not permitted",
            id="a check the suites do not have",
        ),
        pytest.param(
            {"sample": 0.5, "expect": {"answer_contains": "x"}, "judge": "nobody", "rubric": "Polite."},
            "profiles.default.online_evals.judge: 'nobody' is not one of the models",
            id="a judge that is not a model",
        ),
        pytest.param(
            {"sample": 0.5, "rubric": "Polite."},
            "judge: a rubric needs the model that grades it",
            id="a rubric without a judge",
        ),
        pytest.param({"sample": 0.5}, "expect: name at least one check", id="nothing to check"),
    ],
)
def test_an_unusable_online_eval_is_one_line_naming_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], online_evals: dict[str, Any], expected: str
) -> None:
    # When a configuration whose profile has the online eval is checked
    code, _ = check(write(tmp_path, with_online_evals(online_evals)))
    # Then it fails with one line naming the field and the reason
    error = capsys.readouterr().err
    assert code == 1 and error.count("\n") == 1
    assert expected in error


def test_the_sample_is_decided_by_the_run_id_alone_in_the_share_asked() -> None:
    # Given 4000 run ids
    run_ids = [f"run-{index:05d}" for index in range(4000)]
    # When each is sampled at 0, 0.25 and 1, twice
    at_quarter = [run_id for run_id in run_ids if sampled(run_id, 0.25)]
    # Then none, about a quarter and all are in, and the same ones every time
    assert not any(sampled(run_id, 0.0) for run_id in run_ids)
    assert all(sampled(run_id, 1.0) for run_id in run_ids)
    assert 900 <= len(at_quarter) <= 1100
    assert at_quarter == [run_id for run_id in run_ids if sampled(run_id, 0.25)]
