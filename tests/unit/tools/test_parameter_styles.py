"""Parameters written as OpenAPI's style table shows them, and sent that way by an HTTP tool.

The expected texts are the "Style Examples" of the OpenAPI Specification 3.1.0 (section 4.8.12.4,
spec.openapis.org/oas/v3.1.0#style-examples): ``color`` as the string "blue", the array
["blue", "black", "brown"] and the object {"R": 100, "G": 200, "B": 150}.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest

from stepwise.config.http_api import ArgumentBinding
from stepwise.tools.parameter_styles import cookie_pairs, header_value, path_value, query_pairs
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint

BLUE = "blue"
COLORS = ["blue", "black", "brown"]
RGB = {"R": 100, "G": 200, "B": 150}


def binding(location: str, style: str, explode: bool, **extra: Any) -> ArgumentBinding:
    return ArgumentBinding.model_validate({"in": location, "style": style, "explode": explode, **extra})


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("matrix", False, BLUE, ";color=blue"),
        ("matrix", False, COLORS, ";color=blue,black,brown"),
        ("matrix", True, COLORS, ";color=blue;color=black;color=brown"),
        ("matrix", False, RGB, ";color=R,100,G,200,B,150"),
        ("matrix", True, RGB, ";R=100;G=200;B=150"),
        ("label", False, BLUE, ".blue"),
        ("label", False, COLORS, ".blue,black,brown"),
        ("label", True, COLORS, ".blue.black.brown"),
        ("label", False, RGB, ".R,100,G,200,B,150"),
        ("label", True, RGB, ".R=100.G=200.B=150"),
        ("simple", False, BLUE, "blue"),
        ("simple", False, COLORS, "blue,black,brown"),
        ("simple", True, COLORS, "blue,black,brown"),
        ("simple", False, RGB, "R,100,G,200,B,150"),
        ("simple", True, RGB, "R=100,G=200,B=150"),
    ],
)
def test_path_styles_match_the_specifications_table(style: str, explode: bool, value: Any, expected: str) -> None:
    # Given a path parameter in one style / When it is written / Then it reads as the specification shows
    assert path_value("color", value, binding("path", style, explode)) == expected


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("form", False, BLUE, ["color=blue"]),
        ("form", False, COLORS, ["color=blue,black,brown"]),
        ("form", True, COLORS, ["color=blue", "color=black", "color=brown"]),
        ("form", False, RGB, ["color=R,100,G,200,B,150"]),
        ("form", True, RGB, ["R=100", "G=200", "B=150"]),
        ("spaceDelimited", False, COLORS, ["color=blue%20black%20brown"]),
        ("spaceDelimited", False, RGB, ["color=R%20100%20G%20200%20B%20150"]),
        ("pipeDelimited", False, COLORS, ["color=blue|black|brown"]),
        ("pipeDelimited", False, RGB, ["color=R|100|G|200|B|150"]),
        ("deepObject", True, RGB, ["color%5BR%5D=100", "color%5BG%5D=200", "color%5BB%5D=150"]),
    ],
)
def test_query_styles_match_the_specifications_table(
    style: str, explode: bool, value: Any, expected: list[str]
) -> None:
    # Given a query parameter in one style / When it is written / Then it reads as the specification shows
    assert query_pairs("color", value, binding("query", style, explode)) == expected


def test_a_comma_inside_a_value_is_told_apart_from_the_commas_between_values() -> None:
    # Given an unexploded form array whose second item holds a comma
    pairs = query_pairs("tags", ["a", "b,c"], binding("query", "form", False))
    # Then the delimiters are literal and the comma inside the item is percent-encoded
    assert pairs == ["tags=a,b%2Cc"]


def test_deep_object_arrays_and_nested_objects_follow_the_bracket_convention() -> None:
    # Given Stripe-style deepObject parameters: an array to expand and a range of creation times
    expand = query_pairs("expand", ["data.default_source", "data.tax"], binding("query", "deepObject", True))
    created = query_pairs("created", {"gt": 1, "range": {"lte": 2}}, binding("query", "deepObject", True))
    # Then each item has its index and each field its name in brackets, nested fields nested
    assert [unquote(pair) for pair in expand] == ["expand[0]=data.default_source", "expand[1]=data.tax"]
    assert [unquote(pair) for pair in created] == ["created[gt]=1", "created[range][lte]=2"]


def test_allow_reserved_keeps_reserved_characters_but_not_the_querys_own_delimiters() -> None:
    # Given a value holding a path, a colon, an ampersand and a hash
    value = "a/b:c&d#e"
    # When it is written with and without allowReserved
    kept = query_pairs("q", value, binding("query", "form", True, allowReserved=True))
    encoded = query_pairs("q", value, binding("query", "form", True))
    # Then only allowReserved keeps / and :, and neither lets & or # end the parameter
    assert kept == ["q=a/b:c%26d%23e"]
    assert encoded == ["q=a%2Fb%3Ac%26d%23e"]


def test_header_and_cookie_values_are_written_in_their_styles() -> None:
    # Given an array header and an object cookie
    header = header_value("X-Colors", COLORS, binding("header", "simple", False))
    exploded = header_value("X-Color", RGB, binding("header", "simple", True))
    cookies = cookie_pairs("session", "a b;c=d", binding("cookie", "form", True))
    # Then the header is comma-joined and the cookie value cannot end its cookie or start another
    assert (header, exploded) == ("blue,black,brown", "R=100,G=200,B=150")
    assert cookies == ["session=a%20b%3Bc%3Dd"]


def test_a_tool_sends_each_style_where_its_binding_says(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given a hand-written tool with a matrix path parameter, a pipe-delimited query array and a cookie
    properties = {
        "point": {"type": "object"},
        "ids": {"type": "array", "items": {"type": "string"}},
        "session": {"type": "string"},
    }
    bindings = {
        "point": {"in": "path", "style": "matrix", "explode": True},
        "ids": {"in": "query", "style": "pipeDelimited", "explode": False},
        "session": {"in": "cookie"},
    }
    tool = endpoint("locate", "/map{point}", properties, bindings=bindings)
    invoker = make_invoker({"apis": [api_entry(tool_server.url, [tool])]})
    # When the model calls it
    arguments = {"point": {"x": 1, "y": 2}, "ids": ["a|b", "c"], "session": "s1"}
    assert invoker.invoke(call("locate", **arguments)).ok
    # Then the path, query and Cookie header are written in those styles
    (sent,) = tool_server.requests
    assert (sent.path, sent.raw_query, sent.headers["cookie"]) == ("/map;x=1;y=2", "ids=a%7Cb|c", "session=s1")


def test_a_style_a_location_does_not_take_is_refused_naming_it() -> None:
    # Given a matrix style on a query parameter
    # When the binding is read / Then the error names the style and what the query takes
    with pytest.raises(ValueError, match="style matrix is not used in the query; use form or spaceDelimited"):
        binding("query", "matrix", False)
