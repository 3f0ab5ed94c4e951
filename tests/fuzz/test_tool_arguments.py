"""Properties of the tool argument validator, over arbitrary JSON-like arguments and realistic schemas.

Whatever arguments a model sends, invoking a tool never raises; arguments that break the tool's JSON
schema never reach the tool (the loopback API records no request, the Python tool no call), and the
observation names the field at fault. Two HTTP tools of a loopback API (a GET with a query, a POST with
a nested JSON body) and one typed Python tool are the tools under test.

Deterministic: `STEPWISE_FUZZ_EXAMPLES` examples per property (200 by default; `make fuzz` runs 500).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolCall
from stepwise.tools import FunctionTool, Tool, ToolInvoker, ToolRegistry, build_tool_registry, tool
from tests.support.tool_server import ScriptableToolServer

PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "200")),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 80},
        "units": {"enum": ["metric", "imperial"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city"],
    "additionalProperties": False,
}
ORDER_LINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sku": {"type": "string", "minLength": 1}, "qty": {"type": "integer", "minimum": 1}},
    "required": ["sku", "qty"],
    "additionalProperties": False,
}
ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"},
        "items": {"type": "array", "minItems": 1, "maxItems": 20, "items": ORDER_LINE_SCHEMA},
        "express": {"type": "boolean"},
    },
    "required": ["order_id", "items"],
    "additionalProperties": False,
}


def recording_booking_tool(bookings: list[dict[str, Any]]) -> FunctionTool:
    """A typed Python tool that remembers the arguments of every call."""

    def book_table(
        restaurant: str, party_size: int, time: str, notes: str | None = None, dietary: list[str] | None = None
    ) -> str:
        """Book a table.

        Args:
            restaurant: The restaurant's name.
            party_size: How many people.
            time: When, as HH:MM.
            notes: Anything the restaurant should know.
            dietary: Dietary needs of the party.
        """
        bookings.append(
            {"restaurant": restaurant, "party_size": party_size, "time": time, "notes": notes, "dietary": dietary}
        )
        return "booked"

    return tool(book_table)


BOOKING_SCHEMA: dict[str, Any] = recording_booking_tool([]).spec.parameters
SCHEMAS = {"get_weather": WEATHER_SCHEMA, "place_order": ORDER_SCHEMA, "book_table": BOOKING_SCHEMA}
TOOL_NAMES = sorted(SCHEMAS)
FIELD_NAMES = sorted({field for schema in SCHEMAS.values() for field in schema["properties"]})

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# Names no schema here declares, from an alphabet that jsonschema's messages quote as they are.
unknown_names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda name: name not in FIELD_NAMES)

VALID_ARGUMENTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "get_weather": st.fixed_dictionaries(
        {"city": st.text(min_size=1, max_size=80)},
        optional={"units": st.sampled_from(["metric", "imperial"]), "days": st.integers(1, 7)},
    ),
    "place_order": st.fixed_dictionaries(
        {
            "order_id": st.from_regex(r"A-[0-9]{4}", fullmatch=True),
            "items": st.lists(
                st.fixed_dictionaries({"sku": st.text(min_size=1, max_size=20), "qty": st.integers(1, 99)}),
                min_size=1,
                max_size=5,
            ),
        },
        optional={"express": st.booleans()},
    ),
    "book_table": st.fixed_dictionaries(
        {"restaurant": st.text(max_size=30), "party_size": st.integers(1, 20), "time": st.text(max_size=10)},
        optional={
            "notes": st.none() | st.text(max_size=50),
            "dietary": st.none() | st.lists(st.text(max_size=10), max_size=3),
        },
    ),
}


@dataclass
class ToolsUnderTest:
    """The invoker over the three tools, and what reached each of them."""

    invoker: ToolInvoker
    server: ScriptableToolServer
    bookings: list[dict[str, Any]]

    def reached(self) -> int:
        """How many calls reached a tool: requests the API received plus calls of the Python tool."""
        return len(self.server.requests) + len(self.bookings)


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolsUnderTest]:
    """The weather and order tools of a loopback API, and the Python booking tool, behind one invoker."""
    api_tools = [
        {"toolName": "get_weather", "method": "GET", "path": "/weather", "parameter": WEATHER_SCHEMA},
        {"toolName": "place_order", "method": "POST", "path": "/orders", "parameter": ORDER_SCHEMA},
    ]
    bookings: list[dict[str, Any]] = []
    with ScriptableToolServer() as server:
        config = parse_tools_config({"apis": [{"url": server.url, "internal": True, "tools": api_tools}]})
        http_tools = build_tool_registry(config, config_dir=Path(tmp_path_factory.mktemp("tools")))
        every_tool: list[Tool] = [found for name in http_tools.names() if (found := http_tools.get(name)) is not None]
        registry = ToolRegistry([*every_tool, recording_booking_tool(bookings)])
        yield ToolsUnderTest(ToolInvoker(registry), server, bookings)
        http_tools.close()


def tool_call(name: str, arguments: dict[str, Any]) -> ToolCall:
    """A call as the model's parser hands it over."""
    return ToolCall(id="call-1", name=name, arguments=arguments)


def invalid_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """JSON-like values that break `schema`."""
    validator = Draft202012Validator(schema)
    return json_values.filter(lambda value: not validator.is_valid(value))


@st.composite
def any_arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool and arguments for it: valid ones, valid ones with extra keys, or anything JSON-like."""
    name = draw(st.sampled_from(TOOL_NAMES))
    anything = st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=10), json_values, max_size=6)
    arguments = draw(VALID_ARGUMENTS[name] | anything)
    return name, arguments


def named_path(path: str) -> str:
    """A pattern of a problem reported at `path`, or inside it (a bad item of a list is named `items/0`)."""
    return rf"(: |; ){re.escape(path)}[/:]"


@st.composite
def one_bad_field(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    """Valid arguments with exactly one thing wrong, and a pattern of how the observation must name it.

    Wrong: a value that breaks its property's schema (named by its path, e.g. ``items/0/qty``), a
    required argument left out, or an argument the tool does not take (both named by their name).
    """
    name = draw(st.sampled_from(TOOL_NAMES))
    arguments = draw(VALID_ARGUMENTS[name])
    schema = SCHEMAS[name]
    fault = draw(st.sampled_from(["bad value", "nested bad value", "missing", "unexpected"]))
    if fault == "missing":
        missing = draw(st.sampled_from(schema["required"]))
        del arguments[missing]
        return name, arguments, re.escape(repr(missing))
    if fault == "unexpected":
        extra = draw(unknown_names)
        arguments[extra] = draw(json_values)
        return name, arguments, re.escape(repr(extra))
    if fault == "nested bad value" and name == "place_order":
        line = draw(st.integers(0, len(arguments["items"]) - 1))
        field = draw(st.sampled_from(["sku", "qty"]))
        arguments["items"][line][field] = draw(invalid_for(ORDER_LINE_SCHEMA["properties"][field]))
        return name, arguments, named_path(f"items/{line}/{field}")
    field = draw(st.sampled_from(sorted(arguments)))
    arguments[field] = draw(invalid_for(schema["properties"][field]))
    return name, arguments, named_path(field)


@PROPERTY_SETTINGS
@given(case=any_arguments())
def test_any_arguments_never_raise_and_reach_the_tool_only_when_valid(
    tools: ToolsUnderTest, case: tuple[str, dict[str, Any]]
) -> None:
    # Given a tool and any JSON-like arguments for it
    name, arguments = case
    valid = Draft202012Validator(SCHEMAS[name]).is_valid(arguments)
    reached_before = tools.reached()
    # When the model's call is invoked (an exception here fails the property)
    observation = tools.invoker.invoke(tool_call(name, arguments))
    # Then the tool was called once if the arguments are valid, and not at all if they are not
    assert tools.reached() - reached_before == (1 if valid else 0)
    assert observation.ok == valid, observation.error
    if not valid:
        assert (observation.error or "").startswith(f"invalid arguments for {name}: ")


@PROPERTY_SETTINGS
@given(case=one_bad_field())
def test_one_bad_field_is_named_and_the_call_never_reaches_the_tool(
    tools: ToolsUnderTest, case: tuple[str, dict[str, Any], str]
) -> None:
    # Given valid arguments with one field wrong, missing or unexpected
    name, arguments, named_as = case
    reached_before = tools.reached()
    # When the call is invoked
    observation = tools.invoker.invoke(tool_call(name, arguments))
    # Then nothing reached the tool, and the observation the model reads next names that field
    assert tools.reached() == reached_before
    assert not observation.ok
    assert re.search(named_as, observation.content), observation.content


@PROPERTY_SETTINGS
@given(arguments=VALID_ARGUMENTS["book_table"])
def test_valid_arguments_reach_the_python_tool_as_they_were_sent(
    tools: ToolsUnderTest, arguments: dict[str, Any]
) -> None:
    # Given valid arguments for the Python tool
    calls_before = len(tools.bookings)
    # When the call is invoked
    observation = tools.invoker.invoke(tool_call("book_table", arguments))
    # Then the tool ran once, with exactly those arguments (defaults for the ones left out)
    assert (observation.ok, observation.content) == (True, "booked")
    assert tools.bookings[calls_before:] == [{"notes": None, "dietary": None, **arguments}]
