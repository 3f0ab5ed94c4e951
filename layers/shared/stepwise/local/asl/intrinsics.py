"""Intrinsic functions (`States.Format(...)` and friends) in `.$` template values and `...Path` fields.

A call is parsed once at load time (unknown functions and wrong argument counts are definition
errors); arguments are string literals in single quotes (with `\\'`, `\\{`, `\\}` and `\\\\` escapes),
numbers, `true`/`false`/`null`, paths (`$.x`, `$$.Execution.Id`) and nested calls. Bad argument values
at run time fail with `States.IntrinsicFailure`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepwise.local.asl.errors import AslDefinitionError, AslUnsupportedError, IntrinsicFailure
from stepwise.local.asl.paths import JsonPath, parse_path


@dataclass(frozen=True)
class _Literal:
    value: Any
    raw: str | None = None  # a string literal as written, escapes kept: States.Format reads its braces


@dataclass(frozen=True)
class _PathArgument:
    path: JsonPath


@dataclass(frozen=True)
class IntrinsicCall:
    """A parsed intrinsic function call, ready to evaluate against a state's data and context."""

    name: str
    arguments: tuple[_Literal | _PathArgument | IntrinsicCall, ...]

    def evaluate(self, data: Any, context: Any) -> Any:
        """The call's value; `States.IntrinsicFailure` when an argument has the wrong type or value."""
        values = [_evaluate_argument(argument, data, context) for argument in self.arguments]
        first = self.arguments[0] if self.arguments else None
        if self.name == "States.Format" and isinstance(first, _Literal) and first.raw is not None:
            return _format(first.raw, values[1:])
        return _FUNCTIONS[self.name].implementation(values)


def _evaluate_argument(argument: _Literal | _PathArgument | IntrinsicCall, data: Any, context: Any) -> Any:
    if isinstance(argument, _Literal):
        return argument.value
    if isinstance(argument, _PathArgument):
        return argument.path.evaluate(data, context)
    return argument.evaluate(data, context)


def is_intrinsic(text: str) -> bool:
    """Whether a `.$` value is an intrinsic call rather than a path."""
    return text.startswith("States.")


def parse_intrinsic(text: str) -> IntrinsicCall:
    """Parse one intrinsic call; the whole text must be the call."""
    parser = _Parser(text)
    call = parser.call()
    parser.skip_spaces()
    if parser.position != len(text):
        raise AslDefinitionError(f"intrinsic {text!r} has unexpected text after the call")
    return call


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_NAME = re.compile(r"States\.[A-Za-z0-9]+")
_KEYWORDS = {"true": True, "false": False, "null": None}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def fail(self, reason: str) -> AslDefinitionError:
        return AslDefinitionError(f"intrinsic {self.text!r}: {reason} at offset {self.position}")

    def skip_spaces(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def call(self) -> IntrinsicCall:
        match = _NAME.match(self.text, self.position)
        if not match or not self.text.startswith("(", match.end()):
            raise self.fail("expected a call such as States.Format(...)")
        name = match.group()
        if name not in _FUNCTIONS:
            raise AslUnsupportedError(f"intrinsic function {name} is not supported")
        self.position = match.end() + 1
        arguments: list[_Literal | _PathArgument | IntrinsicCall] = []
        self.skip_spaces()
        if self.text.startswith(")", self.position):
            self.position += 1
        else:
            while True:
                arguments.append(self.argument())
                self.skip_spaces()
                if self.text.startswith(",", self.position):
                    self.position += 1
                elif self.text.startswith(")", self.position):
                    self.position += 1
                    break
                else:
                    raise self.fail("expected ',' or ')'")
        spec = _FUNCTIONS[name]
        if not spec.accepts(len(arguments)):
            raise AslDefinitionError(f"{name} takes {spec.arity()} arguments, got {len(arguments)}")
        return IntrinsicCall(name=name, arguments=tuple(arguments))

    def argument(self) -> _Literal | _PathArgument | IntrinsicCall:
        self.skip_spaces()
        rest = self.text[self.position :]
        if rest.startswith("'"):
            return self.string()
        if rest.startswith("$"):
            return _PathArgument(parse_path(self.path_text()))
        if rest.startswith("States."):
            return self.call()
        for keyword, value in _KEYWORDS.items():
            if rest.startswith(keyword):
                self.position += len(keyword)
                return _Literal(value)
        match = _NUMBER.match(self.text, self.position)
        if match:
            self.position = match.end()
            number = match.group()
            return _Literal(float(number) if match.group(1) or match.group(2) else int(number))
        raise self.fail("expected a string, number, boolean, null, path or intrinsic call")

    def string(self) -> _Literal:
        start = self.position + 1
        index = start
        decoded: list[str] = []
        while index < len(self.text) and self.text[index] != "'":
            if self.text[index] == "\\" and index + 1 < len(self.text):
                index += 1
            decoded.append(self.text[index])
            index += 1
        if index >= len(self.text):
            raise self.fail("unclosed string literal")
        self.position = index + 1
        return _Literal("".join(decoded), raw=self.text[start:index])

    def path_text(self) -> str:
        """A path argument runs to the next ',' or ')' that is outside brackets and quotes."""
        start = self.position
        depth = 0
        quote: str | None = None
        while self.position < len(self.text):
            char = self.text[self.position]
            if quote:
                if char == quote:
                    quote = None
            elif char in "'\"":
                quote = char
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif char in ",)" and depth == 0:
                break
            self.position += 1
        return self.text[start : self.position].strip()


def _format(template: str, arguments: list[Any]) -> str:
    """States.Format: `{}` placeholders filled in order; `\\{` and `\\}` in the template are plain braces."""
    pieces: list[str] = []
    used = 0
    index = 0
    while index < len(template):
        char = template[index]
        if char == "\\" and index + 1 < len(template):
            pieces.append(template[index + 1])
            index += 2
            continue
        if template.startswith("{}", index):
            if used >= len(arguments):
                raise IntrinsicFailure("States.Format has more placeholders than arguments")
            value = arguments[used]
            pieces.append(value if isinstance(value, str) else _to_json(value))
            used += 1
            index += 2
            continue
        pieces.append(char)
        index += 1
    if used != len(arguments):
        raise IntrinsicFailure("States.Format has more arguments than placeholders")
    return "".join(pieces)


def _to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _expect_string(value: Any, function: str, position: int) -> str:
    if not isinstance(value, str):
        raise IntrinsicFailure(f"{function}: argument {position} must be a string, got {_to_json(value)}")
    return value


def _expect_array(value: Any, function: str, position: int) -> list[Any]:
    if not isinstance(value, list):
        raise IntrinsicFailure(f"{function}: argument {position} must be an array, got {_to_json(value)}")
    return value


def _expect_integer(value: Any, function: str, position: int) -> int:
    """Step Functions rounds non-integer numbers to the nearest integer in the math functions."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IntrinsicFailure(f"{function}: argument {position} must be a number, got {_to_json(value)}")
    return value if isinstance(value, int) else math.floor(value + 0.5)


def _string_to_json(values: list[Any]) -> Any:
    text = _expect_string(values[0], "States.StringToJson", 1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise IntrinsicFailure(f"States.StringToJson: argument 1 is not JSON ({exc.msg})") from None


def _array_partition(values: list[Any]) -> list[Any]:
    items = _expect_array(values[0], "States.ArrayPartition", 1)
    size = _expect_integer(values[1], "States.ArrayPartition", 2)
    if size < 1:
        raise IntrinsicFailure("States.ArrayPartition: the chunk size must be at least 1")
    return [items[start : start + size] for start in range(0, len(items), size)]


def _array_range(values: list[Any]) -> list[int]:
    start, end, step = (_expect_integer(value, "States.ArrayRange", n + 1) for n, value in enumerate(values))
    if step == 0:
        raise IntrinsicFailure("States.ArrayRange: the step must not be 0")
    result = list(range(start, end + (1 if step > 0 else -1), step))
    if len(result) > 1000:
        raise IntrinsicFailure("States.ArrayRange: the result would have more than 1000 items")
    return result


def _array_get_item(values: list[Any]) -> Any:
    items = _expect_array(values[0], "States.ArrayGetItem", 1)
    index = _expect_integer(values[1], "States.ArrayGetItem", 2)
    if not 0 <= index < len(items):
        raise IntrinsicFailure(f"States.ArrayGetItem: index {index} is out of range for {len(items)} items")
    return items[index]


def _array_unique(values: list[Any]) -> list[Any]:
    unique: list[Any] = []
    for item in _expect_array(values[0], "States.ArrayUnique", 1):
        if item not in unique:
            unique.append(item)
    return unique


def _base64_decode(values: list[Any]) -> str:
    text = _expect_string(values[0], "States.Base64Decode", 1)
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise IntrinsicFailure("States.Base64Decode: argument 1 is not base64 of UTF-8 text") from None


_HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


def _hash(values: list[Any]) -> str:
    data = values[0] if isinstance(values[0], str) else _to_json(values[0])
    algorithm = _expect_string(values[1], "States.Hash", 2)
    if algorithm not in _HASHES:
        raise IntrinsicFailure(f"States.Hash: algorithm must be one of {sorted(_HASHES)}, got {algorithm!r}")
    return hashlib.new(_HASHES[algorithm], data.encode("utf-8")).hexdigest()


def _json_merge(values: list[Any]) -> dict[str, Any]:
    left, right, deep = values
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise IntrinsicFailure("States.JsonMerge: arguments 1 and 2 must be JSON objects")
    if deep is not False:
        raise IntrinsicFailure("States.JsonMerge: only a shallow merge (false) is supported by Step Functions")
    return {**left, **right}


def _math_random(values: list[Any]) -> int:
    start = _expect_integer(values[0], "States.MathRandom", 1)
    end = _expect_integer(values[1], "States.MathRandom", 2)
    if end <= start:
        raise IntrinsicFailure("States.MathRandom: the end must be greater than the start")
    seed = _expect_integer(values[2], "States.MathRandom", 3) if len(values) > 2 else None
    return random.Random(seed).randrange(start, end)


def _string_split(values: list[Any]) -> list[str]:
    text = _expect_string(values[0], "States.StringSplit", 1)
    delimiters = _expect_string(values[1], "States.StringSplit", 2)
    if not delimiters:
        return [text]
    pieces = re.split("[" + re.escape(delimiters) + "]", text)
    return [piece for piece in pieces if piece]


@dataclass(frozen=True)
class _Function:
    min_arguments: int
    max_arguments: int | None  # None: any number
    implementation: Callable[[list[Any]], Any]

    def accepts(self, count: int) -> bool:
        return count >= self.min_arguments and (self.max_arguments is None or count <= self.max_arguments)

    def arity(self) -> str:
        if self.max_arguments is None:
            return f"{self.min_arguments} or more"
        if self.max_arguments == self.min_arguments:
            return str(self.min_arguments)
        return f"{self.min_arguments} to {self.max_arguments}"


_FUNCTIONS: dict[str, _Function] = {
    "States.Format": _Function(
        1, None, lambda values: _format(_expect_string(values[0], "States.Format", 1), values[1:])
    ),
    "States.StringToJson": _Function(1, 1, _string_to_json),
    "States.JsonToString": _Function(1, 1, lambda values: _to_json(values[0])),
    "States.Array": _Function(0, None, list),
    "States.ArrayPartition": _Function(2, 2, _array_partition),
    "States.ArrayContains": _Function(
        2, 2, lambda values: values[1] in _expect_array(values[0], "States.ArrayContains", 1)
    ),
    "States.ArrayRange": _Function(3, 3, _array_range),
    "States.ArrayGetItem": _Function(2, 2, _array_get_item),
    "States.ArrayLength": _Function(1, 1, lambda values: len(_expect_array(values[0], "States.ArrayLength", 1))),
    "States.ArrayUnique": _Function(1, 1, _array_unique),
    "States.Base64Encode": _Function(
        1,
        1,
        lambda values: base64.b64encode(_expect_string(values[0], "States.Base64Encode", 1).encode("utf-8")).decode(
            "ascii"
        ),
    ),
    "States.Base64Decode": _Function(1, 1, _base64_decode),
    "States.Hash": _Function(2, 2, _hash),
    "States.JsonMerge": _Function(3, 3, _json_merge),
    "States.MathRandom": _Function(2, 3, _math_random),
    "States.MathAdd": _Function(
        2,
        2,
        lambda values: (
            _expect_integer(values[0], "States.MathAdd", 1) + _expect_integer(values[1], "States.MathAdd", 2)
        ),
    ),
    "States.StringSplit": _Function(2, 2, _string_split),
    "States.UUID": _Function(0, 0, lambda values: str(uuid.uuid4())),
}
