"""The fault table: per scenario, how many runs there were and how each ended, printed after the tests.

Each test records its scenario's tally in its report's `user_properties`, so the tally also reaches the
controller process when the tests run under pytest-xdist. The plugin that reads them is registered by
`tests/faults/conftest.py`; an xdist controller that never loads that conftest (a whole-suite run) prints
the table when the plugin is also registered from the root, e.g. with `-p tests.faults.report`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import pytest

from tests.faults.outcomes import Outcome, RunVerdict

PLUGIN_NAME = "stepwise-fault-table"
PROPERTY_NAME = "fault_scenario"
_COLUMNS = ("scenario", "runs", "succeeded", "failed as expected", "lost")


@dataclass(frozen=True)
class ScenarioTally:
    """One row of the table; `unexpected` counts runs that ended whole but not as the scenario says."""

    scenario: str
    runs: int
    succeeded: int
    failed_as_expected: int
    lost: int
    unexpected: int

    @classmethod
    def of(cls, scenario: str, verdicts: Iterable[RunVerdict]) -> ScenarioTally:
        """Count the verdicts of a scenario's runs."""
        outcomes = [verdict.outcome for verdict in verdicts]
        return cls(
            scenario=scenario,
            runs=len(outcomes),
            succeeded=outcomes.count(Outcome.SUCCEEDED),
            failed_as_expected=outcomes.count(Outcome.FAILED_AS_EXPECTED),
            lost=outcomes.count(Outcome.LOST),
            unexpected=outcomes.count(Outcome.UNEXPECTED),
        )

    def cells(self) -> tuple[str, ...]:
        """The row as printed."""
        return (
            self.scenario,
            str(self.runs),
            str(self.succeeded),
            str(self.failed_as_expected),
            str(self.lost),
        )


def record_scenario(node: pytest.Item, scenario: str, verdicts: list[RunVerdict]) -> ScenarioTally:
    """Attach the tally of `verdicts` to the test's report, for the table."""
    tally = ScenarioTally.of(scenario, verdicts)
    node.user_properties.append((PROPERTY_NAME, asdict(tally)))
    return tally


def format_table(rows: list[ScenarioTally]) -> list[str]:
    """The table as lines of text, with a total row."""
    total = ScenarioTally(
        scenario="total",
        runs=sum(row.runs for row in rows),
        succeeded=sum(row.succeeded for row in rows),
        failed_as_expected=sum(row.failed_as_expected for row in rows),
        lost=sum(row.lost for row in rows),
        unexpected=sum(row.unexpected for row in rows),
    )
    table = [_COLUMNS, *(row.cells() for row in rows), total.cells()]
    widths = [max(len(line[index]) for line in table) for index in range(len(_COLUMNS))]

    def line(cells: tuple[str, ...]) -> str:
        first, *numbers = cells
        return "  ".join(
            [first.ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(numbers, widths[1:], strict=True))]
        )

    rule = "-" * len(line(_COLUMNS))
    lines = [line(_COLUMNS), rule, *(line(row.cells()) for row in rows), rule, line(total.cells())]
    lines.append("lost must be 0.")
    if total.unexpected:
        odd = ", ".join(f"{row.scenario} ({row.unexpected})" for row in rows if row.unexpected)
        lines.append(f"Runs that ended whole but not as their scenario says (see the failures): {odd}")
    return lines


class FaultTablePlugin:
    """Collects the scenario tallies from test reports and prints the table in the terminal summary."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, ScenarioTally]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the tallies a test's call phase recorded."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PROPERTY_NAME and isinstance(value, dict):
                self.rows.append((report.nodeid.split("::")[0], ScenarioTally(**value)))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """Print the table once, in the process that owns the terminal."""
        if not self.rows or hasattr(config, "workerinput"):
            return
        terminalreporter.write_sep("=", "fault injection")
        # Grouped by test file; within a file in the order the tests finished.
        ordered = [tally for _, tally in sorted(self.rows, key=lambda pair: pair[0])]
        for text in format_table(ordered):
            terminalreporter.write_line(text)


def register(config: pytest.Config) -> None:
    """Register the table plugin once per process."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(FaultTablePlugin(), PLUGIN_NAME)


def pytest_configure(config: pytest.Config) -> None:
    """Lets this module be loaded as a plugin (`-p tests.faults.report`)."""
    register(config)
