"""Fuzz-suite plugins: the pipeline fuzz's figures are printed at the end of the session."""

from __future__ import annotations

import pytest

from tests.fuzz.pipeline_report import register


def pytest_configure(config: pytest.Config) -> None:
    """Print the pipeline fuzz's figures at the end of the session."""
    register(config)
