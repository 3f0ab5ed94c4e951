"""The checks of a case, applied to one run's outcome: each gives a verdict and, when it fails, why.

The rubric is graded elsewhere (`stepwise.evals.judge`), since it needs a model; everything here only
reads the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from stepwise.evals.expect import Expect, ToolExpectation
from stepwise.evals.outcome import RunOutcome, ToolCallMade
from stepwise.patterns.linear import compiled

_SHOWN_CHARS = 80


class CheckResult(BaseModel):
    """One check on one run: its name, the verdict, and the reason when it failed."""

    check: str
    passed: bool
    reason: str | None = None


def _shown(text: str) -> str:
    return json.dumps(text[:_SHOWN_CHARS] + ("…" if len(text) > _SHOWN_CHARS else ""), ensure_ascii=False)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _is_subset(expected: Any, actual: Any) -> bool:
    """True when every key of `expected` is in `actual` with an equal value (recursively for objects)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _is_subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def _field(document: Any, path: str) -> tuple[bool, Any]:
    """The value at the dotted `path` of `document` (list items by index), and whether it is there."""
    current = document
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def _calls_text(calls: list[ToolCallMade]) -> str:
    return ", ".join(call.tool for call in calls) or "none"


def _answer_checks(expect: Expect, answer: str) -> Iterator[CheckResult]:
    for text in _as_list(expect.answer_contains) if expect.answer_contains is not None else []:
        found = text in answer
        yield CheckResult(
            check=f"answer_contains {_shown(text)}",
            passed=found,
            reason=None if found else f"the answer {_shown(answer)} does not contain {_shown(text)}",
        )
    for text in _as_list(expect.answer_not_contains) if expect.answer_not_contains is not None else []:
        found = text in answer
        yield CheckResult(
            check=f"answer_not_contains {_shown(text)}",
            passed=not found,
            reason=f"the answer {_shown(answer)} contains {_shown(text)}" if found else None,
        )
    if expect.answer_matches is not None:
        matched = compiled(expect.answer_matches).search(answer)
        yield CheckResult(
            check="answer_matches",
            passed=matched,
            reason=None if matched else f"the answer {_shown(answer)} does not match /{expect.answer_matches}/",
        )
    if expect.answer_equals is not None:
        equal = answer.strip() == expect.answer_equals.strip()
        yield CheckResult(
            check="answer_equals",
            passed=equal,
            reason=None if equal else f"the answer {_shown(answer)} is not {_shown(expect.answer_equals)}",
        )


def _structured_checks(expect: Expect, outcome: RunOutcome) -> Iterator[CheckResult]:
    if expect.answer_schema is not None:
        yield _schema_check(expect.answer_schema, outcome)
    for path, wanted in (expect.output_equals or {}).items():
        present, value = _field(outcome.output, path)
        passed = present and _is_subset(wanted, value)
        if outcome.output is None:
            reason = "the run has no structured output"
        elif not present:
            reason = f"the structured output has no field {path}"
        else:
            reason = f"{path} is {json.dumps(value, ensure_ascii=False)}, not {json.dumps(wanted, ensure_ascii=False)}"
        yield CheckResult(check=f"output_equals {path}", passed=passed, reason=None if passed else reason)


def _schema_check(schema: dict[str, Any], outcome: RunOutcome) -> CheckResult:
    from jsonschema.validators import validator_for

    from stepwise.patterns.schema_keywords import linear_validator

    document: Any = outcome.output
    if document is None:
        try:
            document = json.loads(outcome.answer or "")
        except ValueError:
            return CheckResult(check="answer_schema", passed=False, reason="the answer is not JSON")
    errors = list(linear_validator(schema, validator_for(schema)).iter_errors(document))
    if not errors:
        return CheckResult(check="answer_schema", passed=True)
    first = errors[0]
    where = "/".join(str(part) for part in first.absolute_path) or "the answer"
    return CheckResult(check="answer_schema", passed=False, reason=f"{where}: {first.message[:200]}")


def _tool_checks(expect: Expect, calls: list[ToolCallMade]) -> Iterator[CheckResult]:
    for wanted in _as_list(expect.tool_called) if expect.tool_called is not None else []:
        expectation = wanted if isinstance(wanted, ToolExpectation) else ToolExpectation(name=wanted)
        named = [call for call in calls if call.tool == expectation.name]
        found = any(_is_subset(expectation.arguments, call.arguments) for call in named)
        label = f"tool_called {expectation.name}" + (
            f" {json.dumps(expectation.arguments, ensure_ascii=False)}" if expectation.arguments else ""
        )
        if found:
            reason = None
        elif named:
            seen = "; ".join(json.dumps(call.arguments, ensure_ascii=False) for call in named)
            reason = f"{expectation.name} was called, but not with those arguments: {seen}"
        else:
            reason = f"{expectation.name} was not called (calls: {_calls_text(calls)})"
        yield CheckResult(check=label, passed=found, reason=reason)
    for name in _as_list(expect.tool_not_called) if expect.tool_not_called is not None else []:
        count = sum(1 for call in calls if call.tool == name)
        yield CheckResult(
            check=f"tool_not_called {name}",
            passed=count == 0,
            reason=f"{name} was called {count} time(s)" if count else None,
        )
    if expect.tool_order is not None:
        remaining = iter(call.tool for call in calls)
        in_order = all(any(tool == name for tool in remaining) for name in expect.tool_order)
        yield CheckResult(
            check="tool_order",
            passed=in_order,
            reason=None
            if in_order
            else f"expected {' -> '.join(expect.tool_order)} in that order; calls: {_calls_text(calls)}",
        )


def _limit_checks(expect: Expect, outcome: RunOutcome) -> Iterator[CheckResult]:
    limits: list[tuple[str, float | None, float | None, str]] = [
        ("max_iterations", expect.max_iterations, outcome.iterations, "iterations"),
        ("max_tokens", expect.max_tokens, outcome.total_tokens, "tokens"),
        ("max_cost_usd", expect.max_cost_usd, outcome.cost_usd, "USD"),
        ("max_seconds", expect.max_seconds, outcome.seconds, "s"),
    ]
    for name, limit, actual, unit in limits:
        if limit is None:
            continue
        if actual is None:
            yield CheckResult(check=name, passed=False, reason="the run has no cost (its model has no prices)")
            continue
        within = actual <= limit
        yield CheckResult(
            check=f"{name} {limit:g}",
            passed=within,
            reason=None if within else f"{actual:g} {unit}, over {limit:g}",
        )
    for field, wanted, found in (
        ("stop_reason", expect.stop_reason, outcome.stop_reason),
        ("status", expect.status, outcome.status),
        ("outcome", expect.outcome, outcome.outcome),
    ):
        if wanted is None:
            continue
        yield CheckResult(
            check=f"{field} {wanted}",
            passed=found == wanted,
            reason=None if found == wanted else f"the {field} is {found}",
        )


def check_outcome(expect: Expect, outcome: RunOutcome) -> list[CheckResult]:
    """Every check of `expect` but the rubric, on `outcome`, in the order docs/evals.md lists them."""
    answer = outcome.answer or ""
    return [
        *_answer_checks(expect, answer),
        *_structured_checks(expect, outcome),
        *_tool_checks(expect, outcome.tool_calls),
        *_limit_checks(expect, outcome),
    ]
