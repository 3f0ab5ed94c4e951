"""Choice rules: comparisons on a `Variable`, combined with And / Or / Not.

As on Step Functions, a comparison whose value has the wrong type is simply false, while a `Variable`
(or a `...Path` operand) that names nothing is a `States.Runtime` error, except for `IsPresent`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stepwise.local.asl.errors import AslDefinitionError
from stepwise.local.asl.paths import JsonPath, parse_path


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp with a time zone (as Step Functions requires), or None."""
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


_ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "Equals": lambda left, right: bool(left == right),
    "LessThan": lambda left, right: bool(left < right),
    "GreaterThan": lambda left, right: bool(left > right),
    "LessThanEquals": lambda left, right: bool(left <= right),
    "GreaterThanEquals": lambda left, right: bool(left >= right),
}

# For each family: does a value belong to it, and how is it turned into something comparable.
_FAMILIES: dict[str, tuple[Callable[[Any], bool], Callable[[Any], Any]]] = {
    "String": (lambda value: isinstance(value, str), lambda value: value),
    "Numeric": (_is_number, lambda value: value),
    "Timestamp": (lambda value: parse_timestamp(value) is not None, parse_timestamp),
}

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "IsNull": lambda value: value is None,
    "IsString": lambda value: isinstance(value, str),
    "IsNumeric": _is_number,
    "IsBoolean": lambda value: isinstance(value, bool),
    "IsTimestamp": lambda value: parse_timestamp(value) is not None,
}


def _operators() -> set[str]:
    names = {f"{family}{ordering}" for family in _FAMILIES for ordering in _ORDERINGS}
    names |= {"BooleanEquals", "StringMatches"}
    names |= {f"{name}Path" for name in names if name != "StringMatches"}
    return names | set(_TYPE_TESTS) | {"IsPresent"}


_OPERATORS = _operators()


def _family_of(operator: str) -> str:
    return next(family for family in _FAMILIES if operator.startswith(family))


@dataclass(frozen=True)
class Comparison:
    """`Variable` compared with a literal operand, or with the value at another path (`...Path`)."""

    variable: JsonPath
    operator: str
    operand: Any

    def matches(self, data: Any, context: Any) -> bool:
        """Whether the rule holds for this state input."""
        if self.operator == "IsPresent":
            return self.variable.is_present(data, context) == self.operand
        value = self.variable.evaluate(data, context)
        if self.operator in _TYPE_TESTS:
            return _TYPE_TESTS[self.operator](value) == self.operand
        operator, operand = self.operator, self.operand
        if isinstance(operand, JsonPath):
            operator, operand = operator.removesuffix("Path"), operand.evaluate(data, context)
        if operator == "StringMatches":
            return isinstance(value, str) and bool(operand.fullmatch(value))
        if operator == "BooleanEquals":
            return isinstance(value, bool) and isinstance(operand, bool) and value == operand
        family = _family_of(operator)
        belongs, comparable = _FAMILIES[family]
        if not (belongs(value) and belongs(operand)):
            return False
        return _ORDERINGS[operator.removeprefix(family)](comparable(value), comparable(operand))


@dataclass(frozen=True)
class AllOf:
    """`And`: every rule holds."""

    rules: tuple[Rule, ...]

    def matches(self, data: Any, context: Any) -> bool:
        """Whether every rule holds."""
        return all(rule.matches(data, context) for rule in self.rules)


@dataclass(frozen=True)
class AnyOf:
    """`Or`: at least one rule holds."""

    rules: tuple[Rule, ...]

    def matches(self, data: Any, context: Any) -> bool:
        """Whether at least one rule holds."""
        return any(rule.matches(data, context) for rule in self.rules)


@dataclass(frozen=True)
class Negation:
    """`Not`: the rule does not hold."""

    rule: Rule

    def matches(self, data: Any, context: Any) -> bool:
        """Whether the inner rule does not hold."""
        return not self.rule.matches(data, context)


Rule = Comparison | AllOf | AnyOf | Negation


@dataclass(frozen=True)
class ChoiceBranch:
    """A top-level rule of a Choice state and the state to go to when it matches."""

    rule: Rule
    next: str


def compile_branches(raw: Any) -> tuple[ChoiceBranch, ...]:
    """Compile the `Choices` list; errors name the rule (`Choices[1].And[0]`) and the reason."""
    if not isinstance(raw, list) or not raw:
        raise AslDefinitionError("Choices must be a non-empty list of rules")
    branches = []
    for index, item in enumerate(raw):
        where = f"Choices[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("Next"), str):
            raise AslDefinitionError(f"{where}: a top-level rule needs a 'Next' state name")
        body = {key: value for key, value in item.items() if key != "Next"}
        branches.append(ChoiceBranch(rule=_compile_rule(body, where), next=item["Next"]))
    return tuple(branches)


def _compile_rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise AslDefinitionError(f"{where}: a rule must be a JSON object")
    body = {key: value for key, value in raw.items() if key != "Comment"}
    if "Next" in body:
        raise AslDefinitionError(f"{where}: 'Next' is only allowed on a top-level rule")
    combinators = [key for key in ("And", "Or", "Not") if key in body]
    if combinators:
        if len(body) != 1:
            raise AslDefinitionError(f"{where}: {combinators[0]} cannot be combined with {sorted(body)}")
        key = combinators[0]
        if key == "Not":
            return Negation(_compile_rule(body[key], f"{where}.Not"))
        if not isinstance(body[key], list) or not body[key]:
            raise AslDefinitionError(f"{where}.{key}: must be a non-empty list of rules")
        rules = tuple(_compile_rule(rule, f"{where}.{key}[{n}]") for n, rule in enumerate(body[key]))
        return AllOf(rules) if key == "And" else AnyOf(rules)
    return _compile_comparison(body, where)


def _compile_comparison(body: dict[str, Any], where: str) -> Comparison:
    if "Variable" not in body:
        raise AslDefinitionError(f"{where}: a rule needs 'Variable' or one of And / Or / Not")
    operators = [key for key in body if key != "Variable"]
    unknown = [key for key in operators if key not in _OPERATORS]
    if unknown:
        raise AslDefinitionError(f"{where}: unknown comparison operator {unknown[0]!r}")
    if len(operators) != 1:
        raise AslDefinitionError(f"{where}: a rule needs exactly one comparison operator, got {operators}")
    operator = operators[0]
    try:
        variable = parse_path(body["Variable"])
    except AslDefinitionError as exc:
        raise AslDefinitionError(f"{where}.Variable: {exc.reason}") from None
    if not variable.definite:
        raise AslDefinitionError(f"{where}.Variable: {variable.source!r} must name a single node")
    return Comparison(variable, operator, _compile_operand(operator, body[operator], f"{where}.{operator}"))


def _compile_operand(operator: str, operand: Any, where: str) -> Any:
    if operator.endswith("Path"):
        try:
            path = parse_path(operand)
        except AslDefinitionError as exc:
            raise AslDefinitionError(f"{where}: {exc.reason}") from None
        if not path.definite:
            raise AslDefinitionError(f"{where}: {operand!r} must name a single node")
        return path
    expected: Callable[[Any], bool]
    if operator in _TYPE_TESTS or operator in ("IsPresent", "BooleanEquals"):
        expected, kind = (lambda value: isinstance(value, bool)), "a boolean"
    elif operator == "StringMatches":
        if not isinstance(operand, str):
            raise AslDefinitionError(f"{where}: must be a string pattern")
        return _wildcard_pattern(operand)
    else:
        family = _family_of(operator)
        expected, kind = _FAMILIES[family][0], f"a {family.lower()} value"
    if not expected(operand):
        raise AslDefinitionError(f"{where}: must be {kind}, got {operand!r}")
    return operand


def _wildcard_pattern(pattern: str) -> re.Pattern[str]:
    """StringMatches: `*` matches any run of characters; `\\*` and `\\\\` are a literal star and backslash."""
    pieces: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            pieces.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        pieces.append(".*" if char == "*" else re.escape(char))
        index += 1
    return re.compile("".join(pieces), re.DOTALL)
