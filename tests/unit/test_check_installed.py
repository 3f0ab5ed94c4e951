"""The setup's check of the installed environment (requirements/check_installed.py), fed what `uv pip check`
prints: consistent but for the conflicts requirements/overrides.txt names."""

from __future__ import annotations

import pytest

from requirements.check_installed import overridden_versions, unexpected_problems

OVERRIDES = overridden_versions("# aws-sam-translator declares ~=2.13.3\npydantic==2.14.4\n")
HEADER = "Using Python 3.11.7 environment at: /work/main/.venv\nChecked 184 packages in 2ms\n"
PYDANTIC_CONFLICT = "The package `aws-sam-translator` requires `pydantic~=2.13.3`, but `2.14.4` is installed"


def test_a_clean_environment_has_no_problem() -> None:
    # Given uv's answer for an environment without conflicts, when it is read, then nothing is reported
    assert unexpected_problems(HEADER + "All installed packages are compatible\n", OVERRIDES) == []


def test_the_conflict_an_override_names_is_no_problem() -> None:
    # Given uv's answer naming only aws-sam-translator's pydantic range, with pydantic at its override
    output = HEADER + "Found 1 incompatibility\n" + PYDANTIC_CONFLICT + "\n"
    # When it is read, then nothing is reported
    assert unexpected_problems(output, OVERRIDES) == []


def test_a_missing_dependency_is_a_problem_beside_the_overridden_conflict() -> None:
    # Given uv's answer naming the overridden conflict and a dependency the lock lacks
    missing = "The package `moto` requires `werkzeug>=0.5,!=2.2.0`, but it's not installed"
    output = HEADER + "Found 2 incompatibilities\n" + PYDANTIC_CONFLICT + "\n" + missing + "\n"
    # When it is read, then the missing dependency alone is reported
    assert unexpected_problems(output, OVERRIDES) == [missing]


def test_an_overridden_package_at_another_version_than_its_override_is_a_problem() -> None:
    # Given uv's answer naming pydantic installed at a version the override does not pin
    conflict = "The package `aws-sam-translator` requires `pydantic~=2.13.3`, but `2.15.0` is installed"
    # When it is read, then that conflict is reported
    assert unexpected_problems(HEADER + "Found 1 incompatibility\n" + conflict + "\n", OVERRIDES) == [conflict]


def test_an_override_that_is_not_a_pin_is_refused_naming_its_line() -> None:
    # Given an overrides file whose second line is a range, when it is read, then its line is named
    with pytest.raises(ValueError, match=r"line 2: 'pydantic>=2\.14' is not `name==version`"):
        overridden_versions("# reason\npydantic>=2.14\n")
