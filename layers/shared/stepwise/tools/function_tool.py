"""Tools written as typed Python functions: the `tool` decorator and the `FunctionTool` it makes.

The JSON schema comes from the signature (``str``, ``int``, ``float``, ``bool``, ``list[...]``,
``dict[str, ...]``, ``Literal[...]``, ``X | None``; a default makes a parameter optional) and the
description and per-argument docs from a Google-style docstring::

    @tool
    def get_order(order_id: str, verbose: bool = False) -> dict:
        '''Look up an order.

        Args:
            order_id: The order number, e.g. "A-1042".
            verbose: Include the line items.
        '''

Built-in tools and a deployer's modules (listed under ``python:``) use the same decorator. The
function stays callable as before; what it returns becomes the observation: a string as it is, a
`ToolResult` as it is, anything else as compact JSON. A function that declares a parameter
``idempotency_key: str | None = None`` is given its call's idempotency key there (the same for every
attempt of one call); the model never sees that parameter.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin, overload

from stepwise.config.tool_sources import TOOL_NAME_PATTERN
from stepwise.errors import ConfigError
from stepwise.models.messages import ToolSpec
from stepwise.tools.base import IDEMPOTENCY_KEY_PARAMETER, NO_CONTEXT, CallContext, ToolResult

_SCALAR_TYPES: dict[object, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_SECTION_HEADER = re.compile(
    r"^(Args|Arguments|Parameters|Keyword Args|Returns?|Yields?|Raises|Examples?|Notes?|Attributes|"
    r"See Also|Warnings?|References?):\s*$"
)
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class FunctionTool:
    """A Python function offered as a tool; calling the object calls the function unchanged."""

    def __init__(self, function: Callable[..., Any], spec: ToolSpec) -> None:
        self.function = function
        self._spec = spec
        self._takes_key = IDEMPOTENCY_KEY_PARAMETER in inspect.signature(function).parameters
        self.__doc__ = function.__doc__
        self.__name__ = getattr(function, "__name__", spec.name)
        self.__module__ = function.__module__

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Call the function with the (already validated) arguments as keywords, and the call's idempotency
        key as `idempotency_key` when the function declares that parameter."""
        if self._takes_key:
            return as_tool_result(self.function(**arguments, **{IDEMPOTENCY_KEY_PARAMETER: context.idempotency_key}))
        return as_tool_result(self.function(**arguments))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self._spec.name!r})"


@overload
def tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a typed function a tool: ``@tool`` or ``@tool(name=..., description=...)``.

    Raises `ConfigError` naming the function and the parameter when the signature cannot be described
    as a JSON schema (a missing or unsupported annotation, ``*args``, positional-only parameters).
    """

    def decorate(target: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(target, spec_from_function(target, name=name, description=description))

    return decorate(function) if function is not None else decorate


def spec_from_function(
    function: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> ToolSpec:
    """Describe a function as a `ToolSpec`: schema from its signature, texts from its docstring."""
    tool_name = name or function.__name__
    if not re.fullmatch(TOOL_NAME_PATTERN, tool_name):
        raise ConfigError(f"tool {tool_name!r}: the name must match {TOOL_NAME_PATTERN}")
    summary, argument_docs = parse_docstring(inspect.getdoc(function) or "")
    try:
        hints = typing.get_type_hints(function)
    except Exception as exc:
        raise ConfigError(f"tool {tool_name}: its annotations cannot be resolved: {exc}") from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name == IDEMPOTENCY_KEY_PARAMETER:
            continue  # given by the invoker, never by the model
        where = f"tool {tool_name}: parameter {parameter.name}"
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise ConfigError(f"{where}: only named parameters can be tool arguments")
        if parameter.name not in hints:
            raise ConfigError(f"{where}: a type annotation is required")
        schema = schema_for_annotation(hints[parameter.name], where)
        if parameter.name in argument_docs:
            schema["description"] = argument_docs[parameter.name]
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif _is_json_value(parameter.default):
            schema["default"] = parameter.default
        properties[parameter.name] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    return ToolSpec(name=tool_name, description=description or summary, parameters=parameters)


def schema_for_annotation(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON schema of one supported type annotation; `ConfigError` naming ``where`` otherwise."""
    if isinstance(annotation, type) and annotation in _SCALAR_TYPES:
        return {"type": _SCALAR_TYPES[annotation]}
    origin = get_origin(annotation)
    arguments = get_args(annotation)
    if annotation is list or origin is list:
        schema: dict[str, Any] = {"type": "array"}
        if arguments:
            schema["items"] = schema_for_annotation(arguments[0], where)
        return schema
    if annotation is dict or origin is dict:
        schema = {"type": "object"}
        if arguments:
            if arguments[0] is not str:
                raise ConfigError(f"{where}: dict keys must be str")
            schema["additionalProperties"] = schema_for_annotation(arguments[1], where)
        return schema
    if origin is Literal:
        return _literal_schema(arguments, where)
    if origin is Union or origin is types.UnionType:
        return _union_schema(arguments, where)
    raise ConfigError(f"{where}: unsupported type annotation {annotation!r}")


def _literal_schema(values: tuple[Any, ...], where: str) -> dict[str, Any]:
    kinds = {_SCALAR_TYPES.get(type(value)) for value in values}
    if None in kinds:
        raise ConfigError(f"{where}: Literal values must be str, int, float or bool")
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(members: tuple[Any, ...], where: str) -> dict[str, Any]:
    present = [member for member in members if member is not type(None)]
    nullable = len(present) < len(members)
    if len(present) == 1:
        schema = schema_for_annotation(present[0], where)
        if nullable and isinstance(schema.get("type"), str):
            return {**schema, "type": [schema["type"], "null"]}
        return {"anyOf": [schema, {"type": "null"}]} if nullable else schema
    options = [schema_for_annotation(member, where) for member in present]
    if nullable:
        options.append({"type": "null"})
    return {"anyOf": options}


def parse_docstring(docstring: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and the ``Args:`` entries by name."""
    lines = docstring.splitlines()
    description: list[str] = []
    argument_docs: dict[str, str] = {}
    index = 0
    while index < len(lines) and not _SECTION_HEADER.match(lines[index]):
        description.append(lines[index])
        index += 1
    while index < len(lines):
        header = _SECTION_HEADER.match(lines[index])
        index += 1
        body: list[str] = []
        while index < len(lines) and not _SECTION_HEADER.match(lines[index]):
            body.append(lines[index])
            index += 1
        if header and header.group(1) in ("Args", "Arguments", "Parameters", "Keyword Args"):
            argument_docs.update(_argument_entries(body))
    return " ".join(" ".join(description).split()), argument_docs


def _argument_entries(body: list[str]) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: str | None = None
    for line in body:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_LINE.match(line.strip())
        if indent <= entry_indent and match:
            current = match.group(1)
            entries[current] = [match.group(2)]
        elif current is not None and indent > entry_indent:
            entries[current].append(line.strip())
    return {name: " ".join(" ".join(parts).split()) for name, parts in entries.items()}


def as_tool_result(value: object) -> ToolResult:
    """What a tool function returned, as a `ToolResult`: text as it is, anything else as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    if value is None:
        return ToolResult(content="(no output)")
    return ToolResult(content=json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


def _is_json_value(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
