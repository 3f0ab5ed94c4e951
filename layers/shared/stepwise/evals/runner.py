"""Running a suite: every attempt of every case through an executor, a few at a time, then the verdicts.

The executor runs one attempt as an ordinary run and returns its outcome: `stepwise eval` gives one that
runs it in the local engine, or one that goes through a deployed stack's HTTP API (`--against`). The
runner only decides: the checks of each attempt, then per case how many of its k attempts passed, pass@k
(at least one did) and pass^k (all did).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from pydantic import BaseModel, Field

from stepwise.evals.checks import CheckResult, check_outcome
from stepwise.evals.outcome import RunOutcome
from stepwise.evals.suite import Case, Suite

Requirement = Literal["all", "any"]
DEFAULT_PARALLEL = 4

RunAttempt = Callable[[Case, int, dict[str, str]], RunOutcome]
"""Runs attempt n (from 1) of a case as a run tagged with the given metadata, and returns its outcome."""

GradeRubric = Callable[[str, str, str], CheckResult]
"""Grades (rubric, question, answer) with the judge model."""


class CaseNotRun(Exception):
    """An attempt could not be run (the API refused it, say): the attempt fails with this reason."""


class Attempt(BaseModel):
    """One run of a case and its checks."""

    number: int
    outcome: RunOutcome | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    failure: str | None = Field(default=None, description="Why the attempt could not be run at all.")

    @property
    def passed(self) -> bool:
        """True when the attempt ran and every check passed."""
        return self.failure is None and all(check.passed for check in self.checks)


class CheckSummary(BaseModel):
    """One check of a case over its attempts: how many passed, and the first failure's reason."""

    check: str
    passes: int
    runs: int
    first_failure: str | None = None


class CaseReport(BaseModel):
    """A case's attempts and verdicts; `passed` follows the suite's requirement (pass^k, or pass@k)."""

    id: str
    runs: int
    passes: int
    pass_at_k: bool
    pass_hat_k: bool
    passed: bool
    mean_tokens: float
    mean_cost_usd: float | None
    mean_seconds: float
    checks: list[CheckSummary]
    attempts: list[Attempt]

    @property
    def first_failure(self) -> str | None:
        """The first failed check's reason (or why the first failed attempt did not run)."""
        for attempt in self.attempts:
            if attempt.failure is not None:
                return f"run {attempt.number}: {attempt.failure}"
            for check in attempt.checks:
                if not check.passed:
                    return f"{check.check}: {check.reason} (run {attempt.number})"
        return None


class SuiteReport(BaseModel):
    """The verdicts of a suite: every case, and whether all passed."""

    suite: str
    require: Requirement
    passed: bool
    cases: list[CaseReport]


def eval_tags(suite: Suite, case: Case, number: int, runs: int) -> dict[str, str]:
    """The metadata an eval run is stored with, so listings and the console show which case it ran."""
    return {"eval.suite": suite.name, "eval.case": case.id, "eval.attempt": f"{number}/{runs}"}


def _attempt(
    suite: Suite, case: Case, number: int, runs: int, run_attempt: RunAttempt, grade: GradeRubric | None
) -> Attempt:
    try:
        outcome = run_attempt(case, number, eval_tags(suite, case, number, runs))
    except CaseNotRun as exc:
        return Attempt(number=number, failure=str(exc))
    checks = check_outcome(case.expect, outcome)
    if case.expect.rubric is not None and grade is not None:
        question = case.input.question if case.input is not None else f"(the question of run {outcome.run_id})"
        checks.append(grade(case.expect.rubric, question, outcome.answer or ""))
    return Attempt(number=number, outcome=outcome, checks=checks)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _summaries(attempts: list[Attempt]) -> list[CheckSummary]:
    summaries: dict[str, CheckSummary] = {}
    for attempt in attempts:
        for check in attempt.checks:
            summary = summaries.setdefault(check.check, CheckSummary(check=check.check, passes=0, runs=0))
            summary.runs += 1
            summary.passes += int(check.passed)
            if not check.passed and summary.first_failure is None:
                summary.first_failure = f"{check.reason} (run {attempt.number})"
    return list(summaries.values())


def case_report(case: Case, attempts: list[Attempt], require: Requirement) -> CaseReport:
    """The verdicts of a case from its attempts."""
    runs = len(attempts)
    passes = sum(1 for attempt in attempts if attempt.passed)
    outcomes = [attempt.outcome for attempt in attempts if attempt.outcome is not None]
    costs = [outcome.cost_usd for outcome in outcomes if outcome.cost_usd is not None]
    pass_at_k, pass_hat_k = passes > 0, passes == runs
    return CaseReport(
        id=case.id,
        runs=runs,
        passes=passes,
        pass_at_k=pass_at_k,
        pass_hat_k=pass_hat_k,
        passed=pass_hat_k if require == "all" else pass_at_k,
        mean_tokens=_mean([outcome.total_tokens for outcome in outcomes]),
        mean_cost_usd=_mean(costs) if costs else None,
        mean_seconds=_mean([outcome.seconds for outcome in outcomes]),
        checks=_summaries(attempts),
        attempts=attempts,
    )


def run_suite(
    suite: Suite,
    run_attempt: RunAttempt,
    *,
    runs: int | None = None,
    parallel: int = DEFAULT_PARALLEL,
    grade: GradeRubric | None = None,
    require: Requirement = "all",
    on_attempt: Callable[[], None] = lambda: None,
) -> SuiteReport:
    """Run every attempt of every case (`runs` attempts each when given, else the case's own `runs`, else
    one), at most `parallel` at a time, and report; `on_attempt` is called as each attempt ends."""
    planned = [
        (case, number, runs or case.runs or 1)
        for case in suite.cases
        for number in range(1, (runs or case.runs or 1) + 1)
    ]

    def one(plan: tuple[Case, int, int]) -> Attempt:
        case, number, total = plan
        try:
            return _attempt(suite, case, number, total, run_attempt, grade)
        finally:
            on_attempt()

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="eval") as pool:
        attempts = list(pool.map(one, planned))
    reports: list[CaseReport] = []
    for case in suite.cases:
        mine = [
            attempt for (planned_case, _, _), attempt in zip(planned, attempts, strict=True) if planned_case is case
        ]
        reports.append(case_report(case, mine, require))
    return SuiteReport(
        suite=suite.name, require=require, passed=all(report.passed for report in reports), cases=reports
    )


def planned_attempts(suite: Suite, runs: int | None) -> int:
    """How many runs `run_suite` will make (for a progress bar)."""
    return sum(runs or case.runs or 1 for case in suite.cases)
