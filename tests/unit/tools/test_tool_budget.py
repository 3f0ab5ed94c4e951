"""Tool schemas over `maxSchemaBytes`: trimmed annotations first, in a fixed order, or left out with a note.

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
from stepwise.tools.tool_budget import BudgetedTool, fit_spec, held_to_budget, spec_bytes

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
    """The spec fitted to `bytes_under` bytes below its own size; fails if it was left out."""
    fitted = fit_spec(spec, spec_bytes(spec) - bytes_under).spec
    assert fitted is not None
    return fitted


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


def test_a_spec_that_cannot_fit_is_left_out_with_a_note() -> None:
    # Given a tool whose rules alone are over the limit
    enum = {"type": "string", "enum": [f"value-{index}" for index in range(200)]}
    spec = ToolSpec(name="pick", description="Pick one.", parameters={"type": "object", "properties": {"v": enum}})
    tool = BudgetedTool(builtin_tools()["calculator"], spec)
    # When the tools are held to a budget of 1 KB
    kept, notes = held_to_budget([tool], 1024)
    # Then it is left out, and the note names it, its size and the limit
    assert kept == []
    assert notes == [
        f"left out pick: its schema is {spec_bytes(spec)} bytes, still {spec_bytes(spec)} after "
        "trimming, over maxSchemaBytes=1024"
    ]


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
    # Then no spec offered is over 16 KB
    assert max(spec_bytes(spec) for spec in discord.specs()) <= 16 * 1024


def test_the_largest_real_schemas_are_left_out_and_the_large_ones_trimmed(discord: ToolRegistry) -> None:
    # Given Discord's API imported with the default limit
    left_out = sorted(note.split(":")[0].removeprefix("left out ") for note in discord.notes if "left out" in note)
    trimmed = sorted(note.split(" ")[1] for note in discord.notes if note.startswith("trimmed "))
    # Then the message, webhook and command tools (60 to 184 KB) are left out, each with a note
    assert len(left_out) == 14
    assert {"create_interaction_response", "execute_webhook", "create_message"} <= set(left_out)
    assert not set(left_out) & set(discord.names())
    # And the tools between 16 and 27 KB are offered with fewer descriptions
    assert trimmed == [
        "create_auto_moderation_rule",
        "update_application",
        "update_auto_moderation_rule",
        "update_my_application",
    ]
    assert all(name in discord for name in trimmed)
