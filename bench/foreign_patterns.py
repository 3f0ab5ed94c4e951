"""Patterns others write, applied to text a caller or a model writes: the runs of `bench/adversarial_cases.py`'s
cases "patterns others write".

Each place a configured or imported pattern is searched gets the same pattern, `HOSTILE`: trailing white
space, which Python's `re` searches from every start and backtracks over the whole run each time (a
quadratic search: 2 s at 10,000 spaces and a letter, two minutes at 100,000), as one careless operator
or server could write it. `(a+)+$`, exponential, would not end at any of the sizes timed here.
"""

from __future__ import annotations

from typing import Any

from stepwise.config.guardrails import DenyRule, Guardrails
from stepwise.config.intent import KeywordRule
from stepwise.config.llm import ScriptScenario, ScriptTurn
from stepwise.evals.checks import check_outcome
from stepwise.evals.expect import Expect
from stepwise.evals.outcome import RunOutcome
from stepwise.guardrails.checks import check_text
from stepwise.intent.keywords import KeywordMatcher
from stepwise.llm.scripted import ScriptedChatModel
from stepwise.models.messages import ChatMessage, ChatRequest, ToolCall, ToolSpec
from stepwise.steps.structured_output import schema_violation
from stepwise.tools import ToolInvoker, ToolRegistry
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult

HOSTILE = r"\s+$"

_GUARDRAILS = Guardrails(input=[DenyRule(deny=[HOSTILE])])
_KEYWORDS = KeywordMatcher([KeywordRule(use_for="topic", option="blank", patterns=[HOSTILE])])
_EXPECT = Expect(answer_matches=HOSTILE)
_SCRIPTED = ScriptedChatModel(
    [ScriptScenario(match=HOSTILE, turns=[ScriptTurn(content="a")]), ScriptScenario(turns=[ScriptTurn(content="b")])]
)
_NAMES_SCHEMA = {"type": "object", "patternProperties": {HOSTILE: {"type": "string"}}, "additionalProperties": False}


class _LookupTool:
    """A tool whose parameter schema, as a server could send it, holds the hostile pattern."""

    spec = ToolSpec(
        name="lookup",
        description="Look a code up.",
        parameters={"type": "object", "properties": {"code": {"type": "string", "pattern": HOSTILE}}},
    )

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        return ToolResult(content="found")


_INVOKER = ToolInvoker(ToolRegistry([_LookupTool()]))


def deny_rule(text: str) -> object:
    """A guardrail's deny pattern searched in a caller's input."""
    return check_text(text, _GUARDRAILS, "input").blocked


def keyword_rule(text: str) -> object:
    """An intent keyword rule searched in a question."""
    return _KEYWORDS.match(text)


def eval_matcher(text: str) -> object:
    """An eval case's `answer_matches` searched in a run's answer."""
    return check_outcome(_EXPECT, RunOutcome(run_id="r", status="SUCCEEDED", answer=text))


def scripted_scenario(text: str) -> object:
    """A scripted model's scenario `match` searched in the first user message."""
    return _SCRIPTED.complete(ChatRequest(messages=[ChatMessage(role="user", content=text)])).content


def tool_argument(text: str) -> object:
    """A tool's parameter `pattern` checked against a model's argument by the guarded invoker."""
    return _INVOKER.invoke(ToolCall(id="c", name="lookup", arguments={"code": text})).ok


def answer_schema(text: str) -> object:
    """A structured answer's schema `pattern` checked against a model's reply."""
    return schema_violation(text, {"type": "string", "pattern": HOSTILE})


def property_names(text: str) -> object:
    """A schema's `patternProperties` (and `additionalProperties: false`) against a property name a model wrote."""
    return schema_violation({text: "x"}, _NAMES_SCHEMA)
