"""Payload templates (Parameters, ItemSelector, ResultSelector) and dynamic values.

A dynamic value is the string of a `key.$` field (or of `ErrorPath`/`CausePath`): a path such as
`$.x` or `$$.Execution.Id`, or an intrinsic call. A payload template is a JSON object whose `key.$`
fields are replaced by their dynamic value (under `key`) when rendered; other values are copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepwise.local.asl.errors import AslDefinitionError
from stepwise.local.asl.intrinsics import IntrinsicCall, is_intrinsic, parse_intrinsic
from stepwise.local.asl.paths import JsonPath, parse_path


@dataclass(frozen=True)
class DynamicValue:
    """A path or an intrinsic call, evaluated against a state's data and the context object."""

    source: str
    expression: JsonPath | IntrinsicCall

    def evaluate(self, data: Any, context: Any) -> Any:
        """The value of the path or of the call."""
        return self.expression.evaluate(data, context)


def parse_dynamic_value(text: Any) -> DynamicValue:
    """Parse the string of a `.$` field: a path starting with `$` or an intrinsic `States.X(...)`."""
    if not isinstance(text, str):
        raise AslDefinitionError(f"expected a path or an intrinsic function, got {text!r}")
    if is_intrinsic(text):
        return DynamicValue(text, parse_intrinsic(text))
    if text.startswith("$"):
        return DynamicValue(text, parse_path(text))
    raise AslDefinitionError(f"{text!r} is neither a path (starting with '$') nor an intrinsic function")


@dataclass(frozen=True)
class _ObjectTemplate:
    fields: tuple[tuple[str, _Node], ...]


@dataclass(frozen=True)
class _ArrayTemplate:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Constant:
    value: str | int | float | bool | None


_Node = _ObjectTemplate | _ArrayTemplate | DynamicValue | _Constant


@dataclass(frozen=True)
class PayloadTemplate:
    """A compiled Parameters / ItemSelector / ResultSelector object."""

    root: _ObjectTemplate

    def render(self, data: Any, context: Any) -> dict[str, Any]:
        """The template with every dynamic value evaluated (`States.Runtime` if a path is missing)."""
        rendered: dict[str, Any] = _render(self.root, data, context)
        return rendered


def compile_template(raw: Any) -> PayloadTemplate:
    """Compile a payload template; the message of any error names the offending key."""
    if not isinstance(raw, dict):
        raise AslDefinitionError(f"must be a JSON object, got {type(raw).__name__}")
    return PayloadTemplate(_compile_object(raw, ""))


def _compile_object(raw: dict[str, Any], location: str) -> _ObjectTemplate:
    fields: list[tuple[str, _Node]] = []
    seen: set[str] = set()
    for key, value in raw.items():
        name = key.removesuffix(".$")
        where = f"{location}.{key}" if location else key
        if name in seen:
            raise AslDefinitionError(f"key {where!r}: {name!r} is given both with and without '.$'")
        seen.add(name)
        if key.endswith(".$"):
            try:
                fields.append((name, parse_dynamic_value(value)))
            except AslDefinitionError as exc:
                raise type(exc)(f"key {where!r}: {exc.reason}") from None
        else:
            fields.append((name, _compile(value, where)))
    return _ObjectTemplate(tuple(fields))


def _compile(raw: Any, location: str) -> _Node:
    if isinstance(raw, dict):
        return _compile_object(raw, location)
    if isinstance(raw, list):
        return _ArrayTemplate(tuple(_compile(item, f"{location}[{n}]") for n, item in enumerate(raw)))
    return _Constant(raw)


def _render(node: _Node, data: Any, context: Any) -> Any:
    if isinstance(node, _ObjectTemplate):
        return {key: _render(value, data, context) for key, value in node.fields}
    if isinstance(node, _ArrayTemplate):
        return [_render(item, data, context) for item in node.items]
    if isinstance(node, DynamicValue):
        return node.evaluate(data, context)
    return node.value
