"""Classification by configured regular expressions (run on RE2, linear in the question), with no model call."""

from __future__ import annotations

from stepwise.config.intent import KeywordRule
from stepwise.patterns.linear import compiled


class KeywordMatcher:
    """Applies keyword rules in order; the first rule that matches decides its category."""

    def __init__(self, rules: list[KeywordRule]) -> None:
        self._rules = [
            (rule.use_for, rule.option, [compiled(pattern, ignore_case=True) for pattern in rule.patterns])
            for rule in rules
        ]

    def match(self, question: str) -> dict[str, str]:
        """`use_for -> option` for every category some rule's pattern finds in `question`."""
        values: dict[str, str] = {}
        for use_for, option, patterns in self._rules:
            if use_for not in values and any(pattern.search(question) for pattern in patterns):
                values[use_for] = option
        return values
