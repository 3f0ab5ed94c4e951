"""Built-in tools and the @tool decorator: schemas from signatures, a safe calculator, the current time."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

import pytest

from stepwise.errors import ConfigError, ToolError
from stepwise.tools import tool
from stepwise.tools.builtin import builtin_tools
from stepwise.tools.calculator import evaluate_arithmetic, format_number


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    # Given a typed function with a Google-style docstring
    def book_table(
        restaurant: str,
        guests: int,
        budget: float,
        outdoor: bool,
        dishes: list[str],
        extras: dict[str, int],
        seating: Literal["bar", "table"] = "table",
        note: str | None = None,
    ) -> str:
        """Book a table at a restaurant.

        Args:
            restaurant: Name of the restaurant.
            guests (int): How many people, children
                included.
            budget: Spend per head.
            outdoor: Sit outside.
            dishes: Dishes to pre-order.
            extras: Extra items by count.
            seating: Where to sit.
            note: Anything the staff should know.

        Returns:
            A booking reference.
        """
        return "ok"

    # When it is made a tool
    spec = tool(book_table).spec

    # Then the name, description and JSON schema describe it exactly
    assert spec.name == "book_table"
    assert spec.description == "Book a table at a restaurant."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "restaurant": {"type": "string", "description": "Name of the restaurant."},
            "guests": {"type": "integer", "description": "How many people, children included."},
            "budget": {"type": "number", "description": "Spend per head."},
            "outdoor": {"type": "boolean", "description": "Sit outside."},
            "dishes": {"type": "array", "items": {"type": "string"}, "description": "Dishes to pre-order."},
            "extras": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "description": "Extra items by count.",
            },
            "seating": {"enum": ["bar", "table"], "type": "string", "description": "Where to sit.", "default": "table"},
            "note": {"type": ["string", "null"], "description": "Anything the staff should know.", "default": None},
        },
        "required": ["restaurant", "guests", "budget", "outdoor", "dishes", "extras"],
        "additionalProperties": False,
    }


def test_the_decorator_takes_a_name_and_description_and_keeps_the_function_callable() -> None:
    # Given a function decorated with an explicit name and description
    @tool(name="add-numbers", description="Add two integers.")
    def add(a: int, b: int = 1) -> int:
        return a + b

    # When the spec is read and the function called directly
    spec = add.spec

    # Then both are as given, and the function still works
    assert (spec.name, spec.description, spec.parameters["required"]) == ("add-numbers", "Add two integers.", ["a"])
    assert add(2, b=3) == 5


def test_an_unsupported_annotation_names_the_function_and_parameter() -> None:
    # Given a parameter typed with a class the schema cannot describe
    def schedule(when: datetime) -> str:
        return str(when)

    # When it is made a tool, then the error says which parameter and why
    with pytest.raises(ConfigError, match="tool schedule: parameter when: unsupported type annotation"):
        tool(schedule)


def test_a_parameter_without_annotation_is_refused() -> None:
    # Given an untyped parameter
    def echo(text) -> str:  # type: ignore[no-untyped-def]
        return str(text)

    # When it is made a tool, then the error asks for an annotation
    with pytest.raises(ConfigError, match="parameter text: a type annotation is required"):
        tool(echo)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("7 % 4", "3"),
        ("-3 ** 2", "-9"),
        ("2 ** 10", "1024"),
        ("0.1 + 0.2", "0.3"),
        ("sqrt(16) + abs(-2)", "6"),
        ("round(2.567, 2)", "2.57"),
        ("max(3, 9, 4) - min(3, 9, 4)", "6"),
        ("2 ** 0.5", "1.4142135623731"),
        ("pi", "3.14159265358979"),
        ("10 ** 100", "1" + "0" * 100),
    ],
)
def test_the_calculator_computes_arithmetic(expression: str, expected: str) -> None:
    # Given an arithmetic expression, when it is evaluated, then the number is right
    assert format_number(evaluate_arithmetic(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os')", "function '__import__' is not allowed"),
        ("os", "unknown name 'os'"),
        ("x + 1", "unknown name 'x'"),
        ("(1).__class__", "Attribute is not allowed"),
        ("'a' * 3", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("[1, 2]", "List is not allowed"),
        ("1 < 2", "Compare is not allowed"),
        ("(lambda: 1)()", "is not allowed"),
        ("9 ** 9 ** 9", "result is too large"),
        ("10 ** 100000", "result is too large"),
        ("1 / 0", "division by zero"),
        ("sqrt(-1)", "cannot compute"),
        ("round(5, -100000000)", "round() takes whole digits"),
        ("1 +", "not valid arithmetic"),
        ("1 + " * 300 + "1", "longer than 500 characters"),
    ],
)
def test_the_calculator_refuses_anything_but_bounded_arithmetic(expression: str, reason: str) -> None:
    # Given an expression that is not plain, bounded arithmetic, when it is evaluated, then it is refused
    with pytest.raises(ToolError, match=re.escape(reason)):
        evaluate_arithmetic(expression)


def test_current_time_reports_the_time_in_the_requested_zone() -> None:
    # Given a clock stopped at noon UTC on Monday 15 January 2024
    tools = builtin_tools(clock=lambda: datetime(2024, 1, 15, 12, 0, tzinfo=UTC))

    # When the time in Tokyo is asked for
    result = tools["current_time"].call({"timezone": "Asia/Tokyo"})

    # Then it is the same instant in Tokyo's offset
    assert result.content == '{"timezone":"Asia/Tokyo","datetime":"2024-01-15T21:00:00+09:00","weekday":"Monday"}'


def test_current_time_defaults_to_utc() -> None:
    # Given the same stopped clock, when no zone is given
    result = builtin_tools(clock=lambda: datetime(2024, 1, 15, 12, 0, tzinfo=UTC))["current_time"].call({})

    # Then the time is given in UTC
    assert '"datetime":"2024-01-15T12:00:00+00:00"' in result.content


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "America", "../../etc/passwd", ""])
def test_current_time_refuses_an_unknown_zone(zone: str) -> None:
    # Given a name that is not an IANA zone, when the time there is asked for, then it is refused
    with pytest.raises(ToolError, match="unknown time zone"):
        builtin_tools()["current_time"].call({"timezone": zone})


def test_builtin_specs_describe_their_arguments() -> None:
    # Given the built-in tools, when their specs are read
    specs = {name: each.spec for name, each in builtin_tools().items()}

    # Then each says what it takes
    assert specs["calculator"].parameters["required"] == ["expression"]
    assert "IANA" in specs["current_time"].parameters["properties"]["timezone"]["description"]
    assert "required" not in specs["current_time"].parameters
