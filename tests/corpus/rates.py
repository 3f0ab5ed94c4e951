"""The corpus pass rate per protocol: how many real completions are read as their source framework reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from stepwise.config.intent import Category
from stepwise.intent.parsing import not_found_categories, parse_intent
from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import ToolSpec
from stepwise.protocols import parse_completion

CASES = Path(__file__).parent / "cases"
PROTOCOLS = ("react_text", "react_json", "xml", "markers", "function_calling")
# The tools the corpus completions call, as their source tests define them.
TOOLS = [
    ToolSpec(
        name="search",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolSpec(
        name="get_weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    ),
]


class CaseResult(NamedTuple):
    """One case: its name, whether it passed, and what was read when it did not."""

    name: str
    passed: bool
    got: str


def load(name: str) -> list[dict[str, Any]]:
    """The cases of one corpus file."""
    cases: list[dict[str, Any]] = json.loads((CASES / f"{name}.json").read_text(encoding="utf-8"))
    return cases


def _matches(decision: Decision, expect: dict[str, Any]) -> bool:
    kind = expect["kind"]
    if kind == "final_answer":
        return isinstance(decision, FinalAnswer) and decision.text == expect["text"]
    if kind == "parse_error":
        return isinstance(decision, ParseError) and expect.get("contains", "") in decision.message
    if not isinstance(decision, ToolCalls) or [call.name for call in decision.calls] != expect["tools"]:
        return False
    arguments = expect.get("arguments")
    return arguments is None or [call.arguments for call in decision.calls] == arguments


def _tools(case: dict[str, Any]) -> list[ToolSpec]:
    """The tools offered to the case's model: the corpus's own, and those its source offered (`offered`)."""
    named = [ToolSpec(name=name, parameters={"type": "object", "properties": {}}) for name in case.get("offered", [])]
    return [*TOOLS, *named]


def run_protocol(protocol: str) -> list[CaseResult]:
    """Every case of a protocol, read with that protocol."""
    results = []
    for case in load(protocol):
        decision = parse_completion(case["input"], protocol, _tools(case))
        results.append(CaseResult(case["name"], _matches(decision, case["expect"]), repr(decision)[:200]))
    return results


def run_intent() -> list[CaseResult]:
    """Every intent case: the options recognised and the categories answered NotFound."""
    results = []
    for case in load("intent"):
        categories = [Category.model_validate(category) for category in case["categories"]]
        values = parse_intent(case["input"], categories)
        unset = not_found_categories(case["input"], categories)
        expect = case["expect"]
        passed = values == expect["values"] and unset == expect.get("unset", [])
        results.append(CaseResult(case["name"], passed, f"values={values} unset={unset}"))
    return results


def all_results() -> dict[str, list[CaseResult]]:
    """The results per protocol, intent included."""
    results = {protocol: run_protocol(protocol) for protocol in PROTOCOLS}
    results["intent"] = run_intent()
    return results


def pass_rate(results: list[CaseResult]) -> float:
    """The share of cases that passed."""
    return sum(result.passed for result in results) / len(results)
