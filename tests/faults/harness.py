"""What every fault scenario does: write a configuration, ask, judge the run, and tally the verdicts."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.local.environment import LocalEnvironment
from tests.faults.dynamodb_proxy import FaultSchedule, FaultyDynamoDBProxy
from tests.faults.outcomes import ExpectedRun, Outcome, RunVerdict, judge_run
from tests.faults.report import record_scenario
from tests.support.openai_server import FakeOpenAIServer

RUNS_PER_SCENARIO = 4
"""Runs per scenario; a few, so one lucky run cannot pass a scenario, and the suite stays quick."""

MODEL_TIMEOUT_SECONDS = 30.0
"""The model's timeout where no fault is a slow reply: a good reply never waits for it, and a loaded machine's
slow one is not read as a fault (a timed-out call is retried, and takes the reply queued for the next)."""
SLOW_REPLY_TIMEOUT_SECONDS = 2.0
"""The model's timeout in a scenario whose fault is a reply slower than it."""


def write_config(
    config_dir: Path,
    model: dict[str, Any],
    *,
    apis: list[dict[str, Any]] | None = None,
    strategy: str = "react",
) -> Path:
    """Write a stepwise.yaml with one `default` profile on `model` (ReAct JSON when `strategy` is react)."""
    profile: dict[str, Any] = {"model": "m", "strategy": strategy}
    if strategy == "react":
        profile["protocol"] = "react_json"
    config = {"models": {"m": model}, "tools": {"apis": apis or [], "builtin": []}, "profiles": {"default": profile}}
    (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return config_dir


def openai_model(server: FakeOpenAIServer, *, timeout_seconds: float = MODEL_TIMEOUT_SECONDS) -> dict[str, Any]:
    """A model entry for the fake OpenAI-compatible server, with native tool calling."""
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-fault-suite",
        "timeout_seconds": timeout_seconds,
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }


@contextlib.contextmanager
def armed(proxy: FaultyDynamoDBProxy, schedule: FaultSchedule) -> Iterator[None]:
    """Inject `schedule`'s faults for the duration of the block only."""
    proxy.arm(schedule)
    try:
        yield
    finally:
        proxy.disarm()


def ask_and_judge(
    environment: LocalEnvironment,
    question: str,
    expected: ExpectedRun,
    *,
    during: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    also: Callable[[], list[str]] | None = None,
) -> RunVerdict:
    """Create a run, execute it to its end (inside `during`, where the faults are), and judge it.

    `also` is called after the run and returns further problems of the scenario's own (e.g. how often
    the model was called); any makes an otherwise good run unexpected.
    """
    meta = environment.create_run(question)
    with during():
        execution = environment.execute(meta.run_id)
    verdict = judge_run(environment.runtime.store, meta.run_id, expected, execution_status=execution.status)
    problems = also() if also is not None else []
    if problems and verdict.outcome in (Outcome.SUCCEEDED, Outcome.FAILED_AS_EXPECTED):
        return RunVerdict(verdict.run_id, Outcome.UNEXPECTED, tuple(problems))
    return verdict


def all_of(*checks: Callable[[], list[str]]) -> Callable[[], list[str]]:
    """One `also` check made of several, each called once per run."""
    return lambda: [problem for check in checks for problem in check()]


class CountCheck:
    """Tells whether a counter (requests a server received, crashes injected) grew by `expected` since
    the last look, for `ask_and_judge(also=...)`."""

    def __init__(self, count: Callable[[], int], *, expected: int, what: str) -> None:
        self._count = count
        self._seen = count()
        self._expected = expected
        self._what = what

    def __call__(self) -> list[str]:
        """The problem, if the counter grew by another amount than expected since the last look."""
        now = self._count()
        grown, self._seen = now - self._seen, now
        if grown != self._expected:
            return [f"{self._what}: {grown}, expected {self._expected}"]
        return []


def settle(node: pytest.Item, scenario: str, verdicts: list[RunVerdict]) -> None:
    """Put the scenario in the table, then fail if any run was lost or ended otherwise than expected."""
    tally = record_scenario(node, scenario, verdicts)
    wrong = [verdict for verdict in verdicts if verdict.outcome in (Outcome.LOST, Outcome.UNEXPECTED)]
    details = "\n".join(f"  run {v.run_id}: {v.outcome.value}: {'; '.join(v.problems)}" for v in wrong)
    assert not wrong, f"{scenario}: {tally.lost} lost and {tally.unexpected} unexpected of {tally.runs} runs\n{details}"
