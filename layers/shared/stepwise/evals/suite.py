"""Eval suites: cases of questions (or stored runs to replay) and the checks their runs must pass.

A suite file is YAML — a list of cases, or a mapping whose `cases:` holds that list (beside `name:` and
`judge:`) — or JSONL, one case per line (`.jsonl`). docs/evals.md describes every field. Everything is
validated here, before any run starts: a mistake is a `SuiteError` naming the case, the field and the
reason (`stepwise eval` exits 2 with it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stepwise.evals.expect import Expect
from stepwise.inputs.json_schemas import checked_json_schema
from stepwise.inputs.validation_problems import reason_of
from stepwise.inputs.yaml_aliases import AliasExpansionExceeded, check_alias_expansion
from stepwise.models.api_requests import RUN_ID_PATTERN

# A case's id and the suite's name travel as run metadata, whose values are at most 512 characters.
MAX_LABEL_CHARS = 128
MAX_RUNS_PER_CASE = 100


class SuiteError(Exception):
    """A suite that cannot be run: where (file, line or case, field) and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CaseInput(_Strict):
    """What a case asks: the question, and optionally the profile, earlier turns and an answer schema."""

    question: str = Field(min_length=1)
    profile: str | None = Field(default=None, min_length=1, max_length=64)
    session: list[str] = Field(
        default_factory=list,
        description="Earlier questions, asked first in a session of the attempt's own; the checks read the last run.",
    )
    response_schema: dict[str, Any] | None = None

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("response_schema")
    @classmethod
    def _a_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return checked_json_schema(value)


class ReplayInput(_Strict):
    """A stored run to replay (its question, its recorded tool answers) instead of a question."""

    run_id: str = Field(pattern=RUN_ID_PATTERN)
    profile: str | None = Field(default=None, min_length=1, max_length=64)
    from_iteration: int = Field(default=0, ge=0)


class Case(_Strict):
    """One case: an id, what to ask (a question, or a stored run to replay), how often, and the checks."""

    id: str = Field(min_length=1, max_length=MAX_LABEL_CHARS)
    input: CaseInput | None = None
    replay: ReplayInput | None = None
    runs: int | None = Field(default=None, ge=1, le=MAX_RUNS_PER_CASE)
    expect: Expect = Field(default_factory=Expect)

    @field_validator("input", mode="before")
    @classmethod
    def _question_alone(cls, value: Any) -> Any:
        # `input: "a question"` is short for `input: {question: "a question"}`
        return {"question": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_thing_to_run(self) -> Case:
        if (self.input is None) == (self.replay is None):
            raise ValueError("give exactly one of input (a question) or replay (a stored run)")
        return self


class Suite(_Strict):
    """A named list of cases, and the model that grades rubrics (a model name of the configuration)."""

    name: str = Field(min_length=1, max_length=MAX_LABEL_CHARS)
    judge: str | None = None
    cases: list[Case] = Field(min_length=1)

    @field_validator("cases")
    @classmethod
    def _unique_ids(cls, cases: list[Case]) -> list[Case]:
        seen: set[str] = set()
        for case in cases:
            if case.id in seen:
                raise ValueError(f"the id {case.id!r} is used by more than one case")
            seen.add(case.id)
        return cases

    @property
    def has_rubrics(self) -> bool:
        """True when a case is graded by the judge model."""
        return any(case.expect.rubric for case in self.cases)


def load_suite(path: Path) -> Suite:
    """Read and validate the suite in `path` (YAML, or JSONL when the name ends in `.jsonl`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    document = _jsonl_cases(path, text) if path.suffix.lower() == ".jsonl" else _yaml_document(path, text)
    if isinstance(document, list):
        document = {"cases": document}
    if not isinstance(document, dict):
        raise SuiteError(f"{path}: a suite is a list of cases, or a mapping with cases:")
    document = {"name": path.stem, **document}
    try:
        return Suite.model_validate(document)
    except ValidationError as exc:
        raise SuiteError(f"{path}: {_located(exc, document)}") from None


def _yaml_document(path: Path, text: str) -> Any:
    try:
        document = yaml.safe_load(text)
        check_alias_expansion(document, what="the suite")
    except AliasExpansionExceeded as exc:
        raise SuiteError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise SuiteError(f"{path}: not valid YAML{at}") from None
    return document


def _jsonl_cases(path: Path, text: str) -> list[Any]:
    cases: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except ValueError as exc:
            raise SuiteError(f"{path}: line {number} is not JSON: {exc}") from None
    return cases


def _located(exc: ValidationError, document: dict[str, Any]) -> str:
    """The problems, each at `cases[i] (id X).field` so the case is found by its id as well as its place."""
    cases = document.get("cases")
    problems: list[str] = []
    for error in exc.errors():
        location = [str(part) for part in error["loc"]]
        if len(location) >= 2 and location[0] == "cases" and location[1].isdigit() and isinstance(cases, list):
            index = int(location[1])
            case = cases[index] if index < len(cases) else None
            case_id = case.get("id") if isinstance(case, dict) else None
            label = f"cases[{index}]" + (f" (id {case_id})" if isinstance(case_id, str) else "")
            location = [label, *location[2:]]
        field = ".".join(location) or "(top level)"
        problems.append(f"{field}: {reason_of(error)}")
    return "; ".join(problems)
