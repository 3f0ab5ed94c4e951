"""A tool's parameter schema, as a server wrote it, checks a model's arguments in time linear in them."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from stepwise.models.messages import ToolSpec
from stepwise.tools import ToolInvoker, ToolRegistry
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
from stepwise.tools.observation import ToolObservation
from tests.unit.tools.config_builders import call

# Long enough that Python's `re` would try about 2**64 ways to split the run of `a` before saying no.
HOSTILE_ARGUMENT = "a" * 64 + "!"
# Generous: RE2 answers in microseconds; the bound only keeps a backtracking search from hanging the suite.
WITHIN_SECONDS = 30.0


class ServerTool:
    """A tool whose parameter schema is a server's, counting the calls that reached it."""

    def __init__(self, parameters: dict[str, Any]) -> None:
        self.spec = ToolSpec(name="lookup", description="Look a code up.", parameters=parameters)
        self.calls: list[dict[str, Any]] = []

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult(content="found")


def one_property(schema: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"code": schema}, "required": ["code"], **settings}


def invoke_within_bound(tool: ServerTool, **arguments: Any) -> ToolObservation:
    """The invoker's observation of one call, failing the test if it takes longer than `WITHIN_SECONDS`."""
    observations: list[ToolObservation] = []
    invoker = ToolInvoker(ToolRegistry([tool]))
    worker = threading.Thread(
        target=lambda: observations.append(invoker.invoke(call("lookup", **arguments))), daemon=True
    )
    worker.start()
    worker.join(WITHIN_SECONDS)
    assert observations, f"the arguments were not checked within {WITHIN_SECONDS} s"
    return observations[0]


def test_a_hostile_pattern_refuses_a_near_match_without_backtracking() -> None:
    # Given a server's tool whose `code` must match `(a+)+$`, exponential for a backtracking engine
    tool = ServerTool(one_property({"type": "string", "pattern": "(a+)+$"}))
    # When the model sends a run of `a` and a `!`
    observation = invoke_within_bound(tool, code=HOSTILE_ARGUMENT)
    # Then the call is refused as not matching, at once, and the tool is not called
    assert not observation.ok
    assert observation.error == f"invalid arguments for lookup: code: '{HOSTILE_ARGUMENT}' does not match '(a+)+$'"
    assert tool.calls == []


def test_an_argument_that_matches_the_pattern_reaches_the_tool() -> None:
    # Given the same tool, when the model sends a code that matches
    tool = ServerTool(one_property({"type": "string", "pattern": "(a+)+$"}))
    observation = invoke_within_bound(tool, code="aaaa")
    # Then the tool is called with it
    assert observation.ok
    assert tool.calls == [{"code": "aaaa"}]


def test_property_names_are_matched_against_pattern_properties_in_linear_time() -> None:
    # Given a schema whose extra names must match a hostile pattern, and no other extra names
    tool = ServerTool(
        one_property({"type": "string"}, patternProperties={"^(a+)+$": {"type": "integer"}}, additionalProperties=False)
    )
    # When the model sends a name that nearly matches, and one that matches with a value of the wrong type
    refused = invoke_within_bound(tool, code="x", **{HOSTILE_ARGUMENT: 1})
    wrong_type = invoke_within_bound(tool, code="x", aaa="three")
    # Then the first is named as no argument of the tool and the second is checked by the pattern's schema
    assert (
        refused.error
        == f"invalid arguments for lookup: arguments: '{HOSTILE_ARGUMENT}' is not an argument of this tool; "
        "the arguments are code"
    )
    assert wrong_type.error == "invalid arguments for lookup: aaa: 'three' is not of type 'integer'"
    assert tool.calls == []


def test_a_pattern_re2_cannot_run_is_not_enforced_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    # Given a server's tool whose pattern uses a lookahead (valid ECMA-262, which RE2 has not)
    pattern = "^(?!admin$)[a-z]+$"
    tool = ServerTool(one_property({"type": "string", "pattern": pattern}))
    # When the model calls it twice with a value the pattern would refuse
    with caplog.at_level(logging.WARNING, logger="stepwise"):
        observations = [invoke_within_bound(tool, code="admin"), invoke_within_bound(tool, code="admin")]
    # Then the tool stays usable (the server checks its own arguments) and the log says so once
    assert [observation.ok for observation in observations] == [True, True]
    assert len(tool.calls) == 2
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert [record.getMessage() for record in warnings] == ["a schema's pattern is not enforced: RE2 cannot run it"]
    assert warnings[0].__dict__["pattern"] == pattern
    assert warnings[0].__dict__["reason"].startswith("a negative lookahead `(?!` is not supported")


def test_an_ecma_pattern_python_cannot_compile_is_a_valid_schema_and_enforced() -> None:
    # Given a server's tool whose pattern uses ECMA-262's `\p{L}` (Python's `re` has no `\p`, RE2 has)
    tool = ServerTool(one_property({"type": "string", "pattern": r"^\p{L}+$"}))
    # When the model sends letters of any script, then letters and a digit
    letters = invoke_within_bound(tool, code="été")
    with_digit = invoke_within_bound(tool, code="été1")
    # Then the schema is valid, the first reaches the tool and the second is refused by the pattern
    assert letters.ok
    assert with_digit.error == r"invalid arguments for lookup: code: 'été1' does not match '^\\p{L}+$'"
    assert tool.calls == [{"code": "été"}]


def test_unevaluated_properties_beside_pattern_properties_is_not_enforced(caplog: pytest.LogCaptureFixture) -> None:
    # Given a schema whose `unevaluatedProperties` would have jsonschema search `patternProperties`' hostile
    # pattern in each property name with Python's `re`
    tool = ServerTool(
        one_property(
            {"type": "string"}, patternProperties={"^(a+)+$": {"type": "integer"}}, unevaluatedProperties=False
        )
    )
    # When the model sends a name that nearly matches
    with caplog.at_level(logging.WARNING, logger="stepwise"):
        observation = invoke_within_bound(tool, code="x", **{HOSTILE_ARGUMENT: 1})
    # Then it is answered at once: `unevaluatedProperties` is not enforced there, and the log says so
    assert observation.ok
    assert len(tool.calls) == 1
    assert [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING] == [
        "a schema's unevaluatedProperties is not enforced beside patternProperties"
    ]


def test_pattern_properties_re2_cannot_run_leave_no_name_to_additional_properties() -> None:
    # Given a schema whose extra names are given by a lookahead pattern, and no other extra names
    tool = ServerTool(
        one_property(
            {"type": "string"}, patternProperties={"^(?!x_)\\w+$": {"type": "integer"}}, additionalProperties=False
        )
    )
    # When the model sends an extra name (of a value the pattern's schema would refuse)
    observation = invoke_within_bound(tool, code="x", limit="ten")
    # Then neither check is made on this side: the call reaches the tool, which checks its own arguments
    assert observation.ok
    assert tool.calls == [{"code": "x", "limit": "ten"}]
