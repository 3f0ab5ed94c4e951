"""The store client's parser of DynamoDB's answers gives what botocore's own parser gives."""

from __future__ import annotations

import base64
import json
from typing import Any

import botocore.session
import pytest
from botocore.parsers import ResponseParserFactory

from stepwise.store.response_parser import DynamoDBParserFactory


def _blob(data: bytes) -> str:
    return base64.b64encode(data).decode()


# Every kind of attribute value, nested, and the values botocore's own handling decides (more than one member,
# a member it does not know, nulls).
ITEM: dict[str, Any] = {
    "pk": {"S": "RUN#1"},
    "count": {"N": "12"},
    "raw": {"B": _blob(b"\x00\xff")},
    "tags": {"SS": ["a", "b"]},
    "sizes": {"NS": ["1", "2.5"]},
    "blobs": {"BS": [_blob(b"x"), _blob(b"y")]},
    "usage": {"M": {"tokens": {"N": "3"}, "parts": {"L": [{"S": "p"}, {"M": {"deep": {"B": _blob(b"z")}}}, None]}}},
    "nothing": {"NULL": True},
    "flag": {"BOOL": False},
    "two": {"S": "a", "N": "1"},
    "unknown": {"X": "new"},
    "null_member": {"S": None},
    "null_in_map": {"M": {"gone": None}},
    "empty": {},
}

ANSWERS = [
    ("GetItem", {"Item": ITEM}),
    (
        "Query",
        {
            "Items": [ITEM, {"pk": {"S": "RUN#2"}}],
            "Count": 2,
            "ScannedCount": 2,
            "LastEvaluatedKey": {"pk": {"S": "RUN#2"}},
        },
    ),
    ("BatchGetItem", {"Responses": {"runs": [ITEM]}, "UnprocessedKeys": {}}),
    ("UpdateItem", {"Attributes": ITEM}),
    ("PutItem", {}),
]


@pytest.mark.parametrize(("operation", "body"), ANSWERS, ids=[operation for operation, _ in ANSWERS])
def test_an_answer_is_parsed_as_botocore_parses_it(operation: str, body: dict[str, Any]) -> None:
    # Given DynamoDB's answer to an operation, as it comes on the wire
    model = botocore.session.Session().get_service_model("dynamodb")
    shape = model.operation_model(operation).output_shape
    assert shape is not None
    response = {"status_code": 200, "headers": {}, "body": json.dumps(body).encode()}
    # When botocore's parser and the store's parse it
    expected = ResponseParserFactory().create_parser("json").parse(dict(response), shape)
    parsed = DynamoDBParserFactory().create_parser("json").parse(dict(response), shape)
    # Then both give the same thing, binary members decoded
    assert parsed == expected
    if operation == "GetItem":
        assert parsed["Item"]["raw"] == {"B": b"\x00\xff"}


def test_the_factory_gives_one_parser_for_every_answer() -> None:
    # Given the store client's parser factory
    factory = DynamoDBParserFactory()
    # When it is asked for the JSON protocol's parser twice (botocore asks once per response)
    first, second = factory.create_parser("json"), factory.create_parser("json")
    # Then it is the same parser, built once
    assert first is second
