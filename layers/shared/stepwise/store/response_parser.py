"""DynamoDB's answers parsed into what botocore's parser gives, without its walk over the service model for
each attribute value.

botocore parses an attribute value (`{"S": "text"}`) as any structure: it looks up each of the shape's ten
members (S, N, B, SS, NS, BS, M, L, NULL, BOOL) in the value, and dispatches each one found to a handler by
name; a META item of 40 attributes cost 400 lookups and 120 dispatches, and this walk was 11% of the Python
CPU of a `stepwise serve` burst (docs/performance.md, "Where a burst's time goes"). An attribute value is
already what botocore returns but for its binary members, which are base64 on the wire: this parser
returns the value as it came, decoding B and BS and going into M and L, and hands anything else (a value
of more than one member, one it does not know, a null) to botocore's own handling.
"""

from __future__ import annotations

import base64
from typing import Any

from botocore.model import MapShape, Shape
from botocore.parsers import JSONParser, ResponseParserFactory

ATTRIBUTE_VALUE = "AttributeValue"
# The members botocore passes on as they come (strings, numbers as strings, sets of them, booleans).
_AS_SENT = frozenset({"S", "N", "SS", "NS", "NULL", "BOOL"})


class AttributeValueParser(JSONParser):
    """botocore's JSON (AWS JSON 1.0) parser, with attribute values and maps of them parsed directly.

    (botocore-stubs leave out the parsers' private handlers this overrides, hence the `type: ignore`s.)
    """

    def __init__(self, timestamp_parser: Any = None, blob_parser: Any = None) -> None:
        super().__init__(timestamp_parser, blob_parser)
        # botocore's default blob parser is base64's
        self._decode_blob = blob_parser or base64.b64decode

    def _handle_structure(self, shape: Shape, value: Any) -> Any:
        if shape.name == ATTRIBUTE_VALUE:
            parsed = self._attribute_value(shape, value)
            if parsed is not None:
                return parsed
        return super()._handle_structure(shape, value)  # type: ignore[misc]

    def _handle_map(self, shape: MapShape, value: Any) -> Any:
        item_shape = shape.value
        if item_shape.name == ATTRIBUTE_VALUE and type(value) is dict:
            return {name: self._member(item_shape, item) for name, item in value.items()}
        return super()._handle_map(shape, value)  # type: ignore[misc]

    def _member(self, shape: Shape, value: Any) -> Any:
        parsed = self._attribute_value(shape, value)
        return parsed if parsed is not None else super()._handle_structure(shape, value)  # type: ignore[misc]

    def _attribute_value(self, shape: Shape, value: Any) -> dict[str, Any] | None:
        """The parsed value, or None where botocore's own handling must decide."""
        if type(value) is not dict or len(value) != 1:
            return None
        ((tag, raw),) = value.items()
        if raw is None:
            return None
        if tag in _AS_SENT:
            return {tag: raw}
        if tag == "M" and type(raw) is dict:
            return {"M": {name: self._member(shape, item) for name, item in raw.items()}}
        if tag == "L" and type(raw) is list:
            return {"L": [None if item is None else self._member(shape, item) for item in raw]}
        if tag == "B":
            return {"B": self._decode_blob(raw)}
        if tag == "BS" and type(raw) is list:
            return {"BS": [None if item is None else self._decode_blob(item) for item in raw]}
        return None


class DynamoDBParserFactory(ResponseParserFactory):
    """botocore's parser factory, giving `AttributeValueParser` for the JSON protocol (DynamoDB's), and the same
    parser for every response: botocore's factory builds one per response, and a parser keeps nothing of the
    responses it parses."""

    def __init__(self) -> None:
        super().__init__()
        self._parsers: dict[str, Any] = {}
        self._parser_defaults: dict[str, Any] = {}

    def set_parser_defaults(self, **kwargs: Any) -> None:
        """Arguments of the parsers made from now on (botocore's `timestamp_parser`, `blob_parser`)."""
        super().set_parser_defaults(**kwargs)
        self._parser_defaults.update(kwargs)
        self._parsers.clear()

    def create_parser(self, protocol_name: str) -> Any:
        """The parser of `protocol_name`."""
        parser = self._parsers.get(protocol_name)
        if parser is None:
            if protocol_name == "json":
                parser = AttributeValueParser(**self._parser_defaults)
            else:
                parser = super().create_parser(protocol_name)
            self._parsers[protocol_name] = parser
        return parser
