"""An operator's pattern RE2 cannot run is refused when the configuration loads, naming the field and construct."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from stepwise.config.guardrails import DenyRule
from stepwise.config.intent import KeywordRule
from stepwise.config.llm import ScriptScenario
from stepwise.evals.expect import Expect

WHY = "is not supported: patterns run on RE2, which takes time linear in the text"


@pytest.mark.parametrize(
    ("model", "fields", "where", "reason"),
    [
        (DenyRule, {"deny": ["ok", r"(\w+)\s\1"]}, ("deny",), rf"pattern 1: a backreference `\1` {WHY}"),
        (
            KeywordRule,
            {"use_for": "topic", "option": "fx", "patterns": ["(?<!no )rate"]},
            ("patterns",),
            f"pattern '(?<!no )rate': a negative lookbehind `(?<!` {WHY}",
        ),
        (Expect, {"answer_matches": "sunny(?= today)"}, ("answer_matches",), f"a lookahead `(?=` {WHY}"),
        (
            ScriptScenario,
            {"match": "(?>plan|plan a) day", "turns": [{"content": "x"}]},
            ("match",),
            f"an atomic group `(?>` {WHY}",
        ),
    ],
    ids=["guardrail deny", "intent keywords", "eval answer_matches", "scripted match"],
)
def test_an_operator_pattern_re2_cannot_run_is_refused_naming_field_and_construct(
    model: type[BaseModel], fields: dict[str, Any], where: tuple[str, ...], reason: str
) -> None:
    # Given an operator's pattern with a construct only a backtracking engine has
    # When the configuration holding it is validated
    with pytest.raises(ValidationError) as raised:
        model.model_validate(fields)
    # Then the error is at the pattern's field and names the construct
    [error] = raised.value.errors()
    assert error["loc"] == where
    assert reason in error["msg"]


def test_the_hostile_pattern_a_backtracking_engine_refused_is_now_accepted() -> None:
    # Given a deny pattern with a repeated group holding an unbounded quantifier (refused while `re` searched it)
    rule = DenyRule(deny=["(a+)+$"])
    # When it is searched in a near-match / Then it is not found, in one pass
    assert [pattern.search("a" * 64 + "!") for pattern in rule.compiled()] == [False]
