"""The pipeline fuzz's figures (examples, runs, terminal, lost, leaks), printed after the tests.

The test records them in its report's `user_properties`, so they reach the controller under
pytest-xdist; the controller prints them when this module is registered (`-p tests.fuzz.pipeline_report`
in the Makefile, or `tests/fuzz/conftest.py` when the fuzz tests run on their own).
"""

from __future__ import annotations

from typing import Any

import pytest

PLUGIN_NAME = "stepwise-pipeline-fuzz"
PROPERTY_NAME = "pipeline_fuzz"
FIGURES = ("examples", "runs", "terminal", "lost", "leaks")


class PipelineFuzzReport:
    """Sums the figures of every pipeline fuzz test and prints one line in the terminal summary."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the figures a test's call phase recorded."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PROPERTY_NAME and isinstance(value, dict):
                for figure in FIGURES:
                    self.totals[figure] = self.totals.get(figure, 0) + int(value.get(figure, 0))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """Print the figures once, in the process that owns the terminal."""
        if not self.totals or hasattr(config, "workerinput"):
            return
        terminalreporter.write_sep("=", "pipeline fuzz")
        terminalreporter.write_line(", ".join(f"{figure} {self.totals.get(figure, 0)}" for figure in FIGURES))
        terminalreporter.write_line("lost and leaks must be 0.")


def register(config: pytest.Config) -> None:
    """Register the report once per process."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(PipelineFuzzReport(), PLUGIN_NAME)


def pytest_configure(config: pytest.Config) -> None:
    """Lets this module be loaded as a plugin (`-p tests.fuzz.pipeline_report`)."""
    register(config)
