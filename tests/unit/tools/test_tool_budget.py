"""Tool schemas over `maxSchemaBytes`: trimmed annotations first, in a fixed order, then reduced; never left out.

The last tests use Discord's published OpenAPI description (tests/fixtures/openapi/real, source in its
README), whose largest operation schemas are 60 to 184 KB.
"""

from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolCall, ToolSpec
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from stepwise.tools.builtin import builtin_tools
from stepwise.tools.tool_budget import REDUCED_NOTE, BudgetedTool, fit_spec, held_to_budget, reduce_spec, spec_bytes

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "openapi" / "real"
LONG = "x" * 400


def annotated_spec() -> ToolSpec:
    """A tool with an annotation at every level, and an argument that is itself called "description"."""
    geo = {"type": "object", "properties": {"lat": {"type": "number", "description": f"depth 3 {LONG}"}}}
    city = {"type": "string", "description": f"depth 2 {LONG}"}
    address = {"type": "object", "properties": {"city": city, "geo": geo}}
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": f"depth 1 {LONG}", "examples": [f"example {LONG}"]},
            "description": {"type": "string", "default": f"default {LONG}"},
            "address": address,
        },
        "required": ["name"],
    }
    return ToolSpec(name="create_customer", description=f"Create a customer. {LONG}", parameters=parameters)


def fitted_to(spec: ToolSpec, bytes_under: int) -> ToolSpec:
    """The spec trimmed to `bytes_under` bytes below its own size; fails if trimming was not enough."""
    fitted = fit_spec(spec, spec_bytes(spec) - bytes_under)
    assert fitted.full is None
    return fitted.spec


def test_a_spec_within_the_limit_is_offered_unchanged() -> None:
    # Given a spec and a limit equal to its size
    spec = annotated_spec()
    # When it is fitted
    fitted = fit_spec(spec, spec_bytes(spec))
    # Then it is the same spec, with nothing removed
    assert (fitted.spec, fitted.removed, fitted.note) == (spec, (), None)


def test_the_deepest_descriptions_go_first() -> None:
    # Given a spec a few bytes over the limit
    # When it is fitted
    fitted = fitted_to(annotated_spec(), 10)
    # Then only the description three levels down is gone
    address = fitted.parameters["properties"]["address"]["properties"]
    assert address["geo"]["properties"]["lat"] == {"type": "number"}
    assert address["city"]["description"].startswith("depth 2")
    assert fitted.parameters["properties"]["name"]["description"].startswith("depth 1")


def test_examples_and_defaults_go_after_the_nested_descriptions_and_before_the_arguments_descriptions() -> None:
    # Given a spec over the limit by more than its nested descriptions weigh
    # When it is fitted
    fitted = fitted_to(annotated_spec(), 900)
    # Then nested descriptions, examples and defaults are gone, the arguments' own descriptions kept
    properties = fitted.parameters["properties"]
    assert properties["address"]["properties"]["city"] == {"type": "string"}
    assert "examples" not in properties["name"]
    assert "default" not in properties["description"]
    assert properties["name"]["description"].startswith("depth 1")
    assert fitted.description == annotated_spec().description


def test_the_tool_description_is_cut_to_its_first_sentence_last() -> None:
    # Given a spec over the limit by more than every schema annotation weighs
    # When it is fitted
    fitted = fitted_to(annotated_spec(), 2200)
    # Then the schema holds no annotation left and the description is its first sentence
    assert fitted.parameters["properties"]["name"] == {"type": "string"}
    assert fitted.description == "Create a customer."


def test_an_argument_named_description_is_never_taken_for_an_annotation() -> None:
    # Given the spec trimmed of every annotation it has
    # When it is fitted
    fitted = fitted_to(annotated_spec(), 2200)
    # Then its "description" argument is still there, and the rules of the schema are untouched
    assert fitted.parameters["properties"]["description"] == {"type": "string"}
    assert fitted.parameters["required"] == ["name"]
    assert fitted.parameters["properties"]["address"]["properties"]["city"] == {"type": "string"}


def test_trimming_is_the_same_at_every_import() -> None:
    # Given the same spec fitted twice to the same limit
    spec = annotated_spec()
    # When each is fitted
    first, second = fit_spec(spec, 1500), fit_spec(copy.deepcopy(spec), 1500)
    # Then both are the same, and the original spec was not changed
    assert first == second
    assert spec == annotated_spec()


def test_a_spec_that_trimming_cannot_fit_is_offered_reduced_with_a_note() -> None:
    # Given a tool whose rules alone are over the limit: an optional 200-value enum
    enum = {"type": "string", "enum": [f"value-{index}" for index in range(200)]}
    parameters = {"type": "object", "properties": {"v": enum, "n": {"type": "integer"}}, "required": ["n"]}
    spec = ToolSpec(name="pick", description="Pick one. Then more.", parameters=parameters)
    # When the tools are held to a budget of 1 KB
    (kept,), notes = held_to_budget([BudgetedTool(builtin_tools()["calculator"], spec)], 1024)
    # Then it is offered, the required argument whole and the optional one by its name only
    assert kept.spec.parameters == {
        "type": "object",
        "properties": {"v": {}, "n": {"type": "integer"}},
        "required": ["n"],
    }
    assert kept.spec.description == f"Pick one.{REDUCED_NOTE.format(name='pick')}"
    assert spec_bytes(kept.spec) <= 1024
    # And the note names it, its sizes and what was removed
    assert notes == [
        f"reduced pick from {spec_bytes(spec)} to {spec_bytes(kept.spec)} bytes ({spec_bytes(spec) - 11} after "
        "trimming, over the limit): removed the tool description's detail, the schemas of optional fields; "
        "find_tools offers its full schema on request"
    ]


def test_a_reduced_spec_keeps_required_fields_whole_and_names_the_optional_ones_at_every_depth() -> None:
    # Given a body whose required field is an object with a required and an optional field of its own
    address = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 80}, "geo": {"type": "object"}},
        "required": ["city"],
    }
    body = {
        "type": "object",
        "properties": {"address": address, "notes": {"type": "array", "items": {"type": "string"}}},
        "required": ["address"],
        "additionalProperties": False,
    }
    parameters = {"type": "object", "properties": {"body": body}, "required": ["body"]}
    spec = ToolSpec(name="ship", description="Ship.", parameters=parameters)
    # When it is reduced to a limit its whole form fits
    reduced, removed = reduce_spec(spec, 4096)
    # Then the required fields keep their rules, the optional ones are names, and the object stays closed
    assert reduced.parameters["properties"]["body"] == {
        "type": "object",
        "properties": {
            "address": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 80}, "geo": {}},
                "required": ["city"],
            },
            "notes": {},
        },
        "required": ["address"],
        "additionalProperties": False,
    }
    assert removed == "the schemas of optional fields"


def test_a_reduced_spec_still_too_large_keeps_its_shallowest_levels_then_only_its_names() -> None:
    # Given a required argument whose required field holds a 300-value enum
    enum = {"type": "string", "enum": [f"category-{index}" for index in range(300)]}
    rules = {"type": "object", "properties": {"category": enum}, "required": ["category"]}
    parameters = {"type": "object", "properties": {"rules": rules, "name": {"type": "string"}}, "required": ["rules"]}
    spec = ToolSpec(name="limit", description="Set limits.", parameters=parameters)
    # When it is reduced to 1 KB, and to less than its argument names take
    reduced, removed = reduce_spec(spec, 1024)
    bare, bare_removed = reduce_spec(spec, 200)
    # Then the enum's level is cut, the levels above kept
    assert reduced.parameters["properties"]["rules"] == {
        "type": "object",
        "properties": {"category": {}},
        "required": ["category"],
    }
    assert removed == "the schemas of optional fields and every schema below depth 1"
    # And past that only an object is left, the description saying how to get the rest
    assert (bare.parameters, bare_removed) == ({"type": "object"}, "every argument's schema and name")
    assert 'find_tools offers when called with tool="limit"' in bare.description


def test_a_reduced_tool_is_checked_against_its_full_schema() -> None:
    # Given the calculator offered with a reduced schema (its expression shown as a name only)
    calculator = builtin_tools()["calculator"]
    optional = calculator.spec.model_copy(update={"parameters": {**calculator.spec.parameters, "required": []}})
    reduced = BudgetedTool(calculator, reduce_spec(optional, 1024)[0], optional)
    invoker = ToolInvoker(ToolRegistry([reduced]))
    assert reduced.spec.parameters["properties"]["expression"] == {}
    # When the model sends a number where the full schema wants a string, and then a good call
    bad = invoker.invoke(ToolCall(id="c1", name="calculator", arguments={"expression": 42}))
    good = invoker.invoke(ToolCall(id="c2", name="calculator", arguments={"expression": "6 * 7"}))
    # Then the wrong one is refused by the full schema, naming the argument, and the good one runs
    assert (bad.ok, "expression" in bad.content) == (False, True)
    assert (good.ok, good.content) == (True, "42")


def test_a_trimmed_tool_checks_and_runs_calls_as_before(tmp_path: Path) -> None:
    # Given the calculator, its description long enough to pass a small limit
    calculator = builtin_tools()["calculator"]
    limit = spec_bytes(calculator.spec) - 50
    registry = ToolRegistry(held_to_budget([calculator], limit)[0])
    invoker = ToolInvoker(registry)
    # When it is offered and called, once rightly and once with a wrong argument
    good = invoker.invoke(ToolCall(id="c1", name="calculator", arguments={"expression": "2 * 21"}))
    bad = invoker.invoke(ToolCall(id="c2", name="calculator", arguments={"expression": 42}))
    # Then its spec fits, the call ran, and the wrong one is refused as before
    assert spec_bytes(registry.specs()[0]) <= limit
    assert (good.ok, good.content) == (True, "42")
    assert (bad.ok, "expression" in bad.content) == (False, True)


@pytest.fixture(scope="module")
def discord(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    """Discord's API imported with the default limit (16 KB)."""
    directory = tmp_path_factory.mktemp("discord")
    packed = REAL / "discord-v10.json.gz"
    (directory / "discord.json").write_bytes(gzip.decompress(packed.read_bytes()))
    entry: dict[str, Any] = {"source": "discord.json", "baseUrl": "http://127.0.0.1:9", "internal": True}
    return build_tool_registry(parse_tools_config({"openapi": [entry]}), config_dir=directory)


def test_every_tool_of_a_real_api_is_offered_within_the_limit(discord: ToolRegistry) -> None:
    # Given Discord's API imported with the default limit
    # Then every operation a tool can send is a tool, and no spec offered is over 16 KB
    assert len(discord) == 239
    assert max(spec_bytes(spec) for spec in discord.specs()) <= 16 * 1024


def test_the_largest_real_schemas_are_reduced_and_the_large_ones_trimmed(discord: ToolRegistry) -> None:
    # Given Discord's API imported with the default limit
    reduced = sorted(note.split(" ")[1] for note in discord.notes if note.startswith("reduced "))
    trimmed = sorted(note.split(" ")[1] for note in discord.notes if note.startswith("trimmed "))
    # Then the message, webhook and command tools (60 to 184 KB) are offered reduced, each with a note
    assert len(reduced) == 14
    assert {"create_interaction_response", "execute_webhook", "create_message"} <= set(reduced)
    assert set(discord.full_specs()) == set(reduced)
    # And their full schemas are the trimmed ones, which the limit could not hold
    assert min(spec_bytes(spec) for spec in discord.full_specs().values()) > 16 * 1024
    # And the tools between 16 and 27 KB are offered with fewer descriptions
    assert trimmed == [
        "create_auto_moderation_rule",
        "update_application",
        "update_auto_moderation_rule",
        "update_my_application",
    ]
    assert all(name in discord for name in trimmed)


def test_a_reduced_spec_accepts_every_argument_its_full_schema_accepts() -> None:
    # Given a closed object of pattern properties, conditions, an optional field and a required enum
    from jsonschema import Draft202012Validator

    labels = {
        "type": "object",
        "patternProperties": {"^x-": {"type": "string", "maxLength": 3}},
        "additionalProperties": False,
        "propertyNames": {"maxLength": 10},
    }
    kind = {"enum": [f"kind-{index}" for index in range(10)]}
    parameters = {
        "type": "object",
        "properties": {"labels": labels, "kind": kind, "count": {"type": "integer", "not": {"const": 13}}},
        "required": ["labels", "kind"],
        "additionalProperties": False,
    }
    spec = ToolSpec(name="tag", description="Tag.", parameters=parameters)
    full = Draft202012Validator(parameters)
    # When it is reduced, its required fields kept whole
    reduced_spec, removed = reduce_spec(spec, 1024)
    reduced = Draft202012Validator(reduced_spec.parameters)
    assert removed == "the schemas of optional fields"
    # Then every argument the full schema accepts, the reduced one accepts too
    accepted = [
        {"labels": {"x-a": "abc"}, "kind": "kind-7"},
        {"labels": {}, "kind": "kind-9", "count": 12},
    ]
    assert all(full.is_valid(each) and reduced.is_valid(each) for each in accepted)
