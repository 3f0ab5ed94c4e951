"""An operator's pattern RE2 cannot run is refused when the configuration loads, naming the field and construct;
so is a schema no one but Stepwise checks (a response or answer schema), a request's included."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from stepwise.config.guardrails import DenyRule
from stepwise.config.intent import KeywordRule
from stepwise.config.llm import ScriptScenario
from stepwise.config.model import AgentProfile
from stepwise.evals.expect import Expect
from stepwise.models.api_requests import RunRequest

WHY = "is not supported: patterns run on RE2, which takes time linear in the text"
_SCHEMA = {"type": "object", "properties": {"day": {"type": "string", "pattern": "^(?!sunday$)[a-z]+$"}}}


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


@pytest.mark.parametrize(
    ("model", "fields", "where"),
    [
        (AgentProfile, {"model": "m", "response_schema": _SCHEMA}, ("response_schema",)),
        (RunRequest, {"input": "Plan my day", "response_schema": _SCHEMA}, ("response_schema",)),
        (Expect, {"answer_schema": _SCHEMA}, ("answer_schema",)),
    ],
    ids=["a profile's response_schema", "a request's response_schema", "an eval's answer_schema"],
)
def test_a_schema_only_stepwise_checks_is_refused_when_re2_cannot_run_its_pattern(
    model: type[BaseModel], fields: dict[str, Any], where: tuple[str, ...]
) -> None:
    # Given a schema checked by Stepwise alone (no server behind it checks the value again), with a lookahead
    # When it is validated
    with pytest.raises(ValidationError) as raised:
        model.model_validate(fields)
    # Then it is refused at its field, naming the pattern's place and the construct
    [error] = raised.value.errors()
    assert error["loc"] == where
    assert f"a pattern at /properties/day/pattern: a negative lookahead `(?!` {WHY}" in error["msg"]


def test_a_given_schema_may_use_an_ecma_pattern_python_cannot_compile() -> None:
    # Given a profile's schema whose pattern is ECMA-262's `\p{L}` (no `\p` in Python's `re`; RE2 has it)
    schema = {"type": "object", "properties": {"city": {"type": "string", "pattern": r"^\p{L}+$"}}}
    # When it is validated / Then it is accepted
    assert AgentProfile.model_validate({"model": "m", "response_schema": schema}).response_schema == schema


@pytest.mark.parametrize("pattern", [r"\b你好\b", r"\w+café"], ids=["word edge", "word character"])
def test_an_operator_pattern_whose_word_classes_meet_non_ascii_letters_is_refused_saying_what_to_write(
    pattern: str,
) -> None:
    # Given an intent rule written for Python's re, whose \b or \w counted Chinese or accented letters, which
    # RE2 counts as ASCII only (the rule would load and silently never match)
    # When the configuration holding it is validated
    with pytest.raises(ValidationError) as raised:
        KeywordRule.model_validate({"use_for": "greeting", "option": "hello", "patterns": [pattern]})
    # Then the error names the escape and the spelling that works
    [error] = raised.value.errors()
    assert "counts only ASCII letters and digits on RE2" in error["msg"]
    assert r"[\p{L}\p{N}_]" in error["msg"]


def test_word_classes_in_an_ascii_pattern_and_non_ascii_letters_without_them_are_accepted() -> None:
    # Given rules with \b on ASCII words, a Chinese word without word classes, and an escaped backslash before b
    patterns = [r"\bhello\b", "你好", r"\\b你好"]
    # When validated, then all are accepted
    KeywordRule.model_validate({"use_for": "greeting", "option": "hello", "patterns": patterns})
