"""OpenAPI operations as HTTP tool endpoints: one JSON-schema object of arguments, and where each goes.

Path, query, header and cookie parameters become arguments of the same name, made model-safe by
`argument_name_for` (``page[size]`` → ``page_size``, Twilio's ``StartTime<`` → ``StartTime_lt``). Two
parameters can still end up with one argument name: ``id`` in the path and in a header, or ``page[size]``
and ``page_size`` in one query string. The later one, in declaration order, gets the first free name of:
the location as a prefix (``header_id``, ``query_page_size``), then that with ``_2``, ``_3``... The
argument's binding keeps the parameter's real name, so the request goes out as the document says; no
operation is refused for its names. A JSON request body becomes one argument, ``body``, holding the body
as the document describes it: the body keeps its own shape (an array body stays an array) and its fields
can never clash with a parameter.
Operations are listed cheaply first, so that ``include``/``exclude`` can leave out an operation the
importer could not handle without failing the whole document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from stepwise.config.http_api import PATH_PLACEHOLDER, STYLES_BY_LOCATION, ApiKeyConfig, ArgumentBinding, HttpToolConfig
from stepwise.config.openapi_source import OperationFilter
from stepwise.config.tool_call_rules import RESERVED_HEADERS
from stepwise.errors import ConfigError
from stepwise.inputs.validation_problems import reasons_of
from stepwise.tools.openapi.names import free_argument_name, numbered, tool_name_for
from stepwise.tools.openapi.schemas import SchemaNormaliser, resolve_object

MAX_DESCRIPTION_CHARS = 4096
HTTP_METHODS = ("get", "put", "post", "delete", "patch")
BODY_ARGUMENT_NAMES = ("body", "request_body")
# The specification says these header parameters are ignored: content negotiation and the credential
# are the client's business (the credential is the source's apiKey).
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})


@dataclass(frozen=True)
class Operation:
    """One operation of a document, before its schemas are read."""

    method: str
    path: str
    operation: dict[str, Any]
    path_parameters: tuple[Any, ...]
    operation_id: str | None
    tags: tuple[str, ...]
    tool_name: str

    @property
    def label(self) -> str:
        """How errors name the operation: by operationId, else by method and path."""
        return f"operation {self.operation_id}" if self.operation_id else f"operation {self.method} {self.path}"


def list_operations(document: dict[str, Any], *, where: str) -> list[Operation]:
    """Every GET, PUT, POST, DELETE and PATCH operation, in document order.

    Tool names may clash here (two long operationIds cut to the same 64 characters); `unique_names`
    settles that after filtering, so that ``exclude`` can still leave one of them out.
    """
    operations: list[Operation] = []
    for path, raw_item in (document.get("paths") or {}).items():
        item = resolve_object(document, raw_item, where=f"{where}: path {path}")
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: path {path}: a path item must be a mapping")
        shared_parameters = tuple(item.get("parameters") or ())
        for method in (key for key in item if key in HTTP_METHODS):
            operation = item[method]
            if not isinstance(operation, dict):
                raise ConfigError(f"{where}: {method.upper()} {path}: an operation must be a mapping")
            operation_id = operation.get("operationId")
            found = Operation(
                method=method.upper(),
                path=str(path),
                operation=operation,
                path_parameters=shared_parameters,
                operation_id=operation_id if isinstance(operation_id, str) and operation_id else None,
                tags=tuple(str(tag) for tag in operation.get("tags") or ()),
                tool_name=tool_name_for(operation_id if isinstance(operation_id, str) else None, method, str(path)),
            )
            operations.append(found)
    return operations


def unique_names(operations: list[Operation]) -> tuple[list[Operation], list[str]]:
    """The operations with unique tool names, and a note for each one renamed.

    In document order the first operation keeps a name; a later one with the same name gets the first
    free ``_2``, ``_3``... suffix (cut to fit 64 characters), so the result is the same at every load.
    """
    taken = {operation.tool_name for operation in operations}
    owners: dict[str, str] = {}
    named: list[Operation] = []
    notes: list[str] = []
    for operation in operations:
        name = operation.tool_name
        if name in owners:
            number = 2
            while (name := numbered(operation.tool_name, number)) in taken:
                number += 1
            taken.add(name)
            notes.append(
                f"{operation.label}: tool name {operation.tool_name} is also the name of "
                f"{owners[operation.tool_name]}; named {name}"
            )
            operation = replace(operation, tool_name=name)
        owners.setdefault(operation.tool_name, operation.label)
        named.append(operation)
    return named, notes


def select_operations(
    operations: list[Operation], include: OperationFilter | None, exclude: OperationFilter | None, *, where: str
) -> list[Operation]:
    """The operations ``include`` picks (all without it) minus those ``exclude`` names.

    A tag or operation a filter names that the document does not have is a `ConfigError`: a typo would
    otherwise silently offer the wrong tools.
    """
    for name, chosen in (("include", include), ("exclude", exclude)):
        if chosen is not None:
            _check_filter(operations, chosen, f"{where}: {name}")
    selected = [op for op in operations if include is None or _matches(op, include)]
    return [op for op in selected if exclude is None or not _matches(op, exclude)]


def _matches(operation: Operation, chosen: OperationFilter) -> bool:
    names = {operation.operation_id, operation.tool_name}
    return bool(set(operation.tags) & set(chosen.tags)) or bool(names & set(chosen.operations))


def _check_filter(operations: list[Operation], chosen: OperationFilter, where: str) -> None:
    tags = {tag for op in operations for tag in op.tags}
    names = {name for op in operations for name in (op.operation_id, op.tool_name) if name}
    for tag in chosen.tags:
        if tag not in tags:
            raise ConfigError(f"{where}: no operation has the tag {tag!r}")
    for name in chosen.operations:
        if name not in names:
            raise ConfigError(f"{where}: the document has no operation {name!r}")


def endpoint_for(
    document: dict[str, Any], operation: Operation, *, where: str, credential: ApiKeyConfig | None = None
) -> HttpToolConfig:
    """The HTTP tool endpoint of ``operation``; `ConfigError` naming it and the reason otherwise.

    A parameter that ``credential`` supplies (the source's API key, by location and name) is not offered
    to the model: the configured key fills it.
    """
    at = f"{where}: {operation.label}"
    builder = _EndpointBuilder(document, operation, at, credential)
    builder.add_parameters()
    builder.add_body()
    return builder.build()


class _EndpointBuilder:
    """Collects one operation's arguments, their schemas and where each goes, then checks the result."""

    def __init__(
        self, document: dict[str, Any], operation: Operation, where: str, credential: ApiKeyConfig | None
    ) -> None:
        self._document = document
        self._credential = credential
        self._operation = operation
        self._where = where
        self._schemas = SchemaNormaliser(document, where=where)
        self._properties: dict[str, Any] = {}
        self._required: list[str] = []
        self._bindings: dict[str, ArgumentBinding] = {}
        self._body_encoding = "json"
        self._path = operation.path

    def add_parameters(self) -> None:
        path_arguments: dict[str, str] = {}
        for parameter in self._parameters():
            argument = self._add_parameter(parameter)
            if argument is not None and parameter["in"] == "path":
                path_arguments[parameter["name"]] = argument

        def placeholder(match: re.Match[str]) -> str:
            if match.group(1) not in path_arguments:
                raise ConfigError(f"{self._where}: path parameter {match.group(1)} is in the path but not declared")
            return "{" + path_arguments[match.group(1)] + "}"

        self._path = PATH_PLACEHOLDER.sub(placeholder, self._operation.path)

    def _parameters(self) -> list[dict[str, Any]]:
        # Operation parameters override path-level ones with the same name and location.
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for raw in (*self._operation.path_parameters, *(self._operation.operation.get("parameters") or ())):
            parameter = resolve_object(self._document, raw, where=self._where)
            if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
                raise ConfigError(f"{self._where}: a parameter has no name")
            location = parameter.get("in")
            if location not in ("path", "query", "header", "cookie"):
                raise ConfigError(
                    f"{self._where}: parameter {parameter['name']}: 'in' must be path, query, header or cookie"
                )
            merged[(parameter["name"], location)] = parameter
        return list(merged.values())

    def _add_parameter(self, parameter: dict[str, Any]) -> str | None:
        """Add one parameter as an argument and return the argument's name (None when it is not sent)."""
        name, location = parameter["name"], parameter["in"]
        required = location == "path" or parameter.get("required") is True
        if (location == "header" and name.lower() in _IGNORED_HEADERS) or self._is_credential(name, location):
            return None
        if location == "header" and name.lower() in RESERVED_HEADERS:
            if required:
                raise ConfigError(
                    f"{self._where}: {location} parameter {name} is required but cannot be sent by a tool"
                )
            return None
        if location == "path" and "{" + name + "}" not in self._operation.path:
            raise ConfigError(f"{self._where}: path parameter {name} does not appear in the path")
        argument = free_argument_name(name, location, taken={*self._properties, *BODY_ARGUMENT_NAMES})
        schema = self._schemas.normalise(_parameter_schema(parameter))
        if isinstance(parameter.get("description"), str) and parameter["description"].strip():
            schema = {**schema, "description": parameter["description"].strip()}
        self._properties[argument] = schema
        if required:
            self._required.append(argument)
        self._bindings[argument] = self._binding(parameter, argument)
        return argument

    def _binding(self, parameter: dict[str, Any], argument: str) -> ArgumentBinding:
        """How the parameter is sent: its location, name, style, explode and allowReserved as declared."""
        location = parameter["in"]
        binding: dict[str, Any] = {"in": location}
        if location != "path":
            binding["name"] = parameter["name"]
        style = parameter.get("style")
        if "content" in parameter and "schema" not in parameter:
            # A parameter described by a media type is sent as that media type's text (JSON).
            style = None
        elif isinstance(style, str):
            if style not in STYLES_BY_LOCATION[location]:
                allowed = " or ".join(STYLES_BY_LOCATION[location])
                raise ConfigError(
                    f"{self._where}: {location} parameter {parameter['name']}: style {style!r} is not one of {allowed}"
                )
            binding["style"] = style
        if isinstance(parameter.get("explode"), bool):
            binding["explode"] = parameter["explode"]
        if location == "query" and parameter.get("allowReserved") is True:
            binding["allowReserved"] = True
        if location == "path" and parameter.get("x-multi-segment") is True:
            binding["multiSegment"] = True
        try:
            return ArgumentBinding.model_validate(binding)
        except ValidationError as exc:
            raise ConfigError(f"{self._where}: parameter {argument}: {reasons_of(exc)}") from None

    def _is_credential(self, name: str, location: str) -> bool:
        key = self._credential
        if key is None or key.name is None or key.location != location:
            return False
        return name.lower() == key.name.lower() if location == "header" else name == key.name

    def add_body(self) -> None:
        raw = self._operation.operation.get("requestBody")
        if raw is None:
            return
        body = resolve_object(self._document, raw, where=self._where)
        if not isinstance(body, dict):
            raise ConfigError(f"{self._where}: requestBody must be a mapping")
        required = body.get("required") is True
        content: dict[str, Any] = body["content"] if isinstance(body.get("content"), dict) else {}
        chosen = _body_media_type(content)
        if self._operation.method == "GET":
            if required:
                raise ConfigError(f"{self._where}: requestBody is required but a GET request has no body")
            return
        if chosen is None:
            shown = ", ".join(content) or "no media type"
            raise ConfigError(
                f"{self._where}: the request body is {shown}; only JSON, form-urlencoded and multipart form "
                "fields can be sent"
            )
        media_type, encoding = chosen
        media = content[media_type] if isinstance(content[media_type], dict) else {}
        schema = self._schemas.normalise(media.get("schema", {}))
        if encoding != "json":
            schema = self._form_schema(schema, encoding)
        if isinstance(body.get("description"), str) and body["description"].strip() and "description" not in schema:
            schema = {**schema, "description": body["description"].strip()}
        argument = next(name for name in BODY_ARGUMENT_NAMES if name not in self._properties)
        self._properties[argument] = schema
        if required:
            self._required.append(argument)
        self._bindings[argument] = ArgumentBinding.model_validate({"in": "body"})
        self._body_encoding = encoding

    def _form_schema(self, schema: dict[str, Any], encoding: str) -> dict[str, Any]:
        """A form body's schema: an object of fields; multipart file fields are left out (or refuse the operation)."""
        if schema.get("type") not in (None, "object") or not isinstance(schema.get("properties", {}), dict):
            raise ConfigError(f"{self._where}: a {encoding} request body must be an object of fields")
        if encoding != "multipart":
            return schema
        properties = schema.get("properties", {})
        files = [name for name, field in properties.items() if _is_file_field(field)]
        required_files = [name for name in files if name in (schema.get("required") or [])]
        if required_files:
            raise ConfigError(
                f"{self._where}: the multipart body requires file field(s) {', '.join(required_files)}, "
                "which a tool cannot send"
            )
        if not files:
            return schema
        if len(files) == len(properties):
            raise ConfigError(
                f"{self._where}: the multipart body has only file fields ({', '.join(files)}), which a tool cannot send"
            )
        return {**schema, "properties": {name: field for name, field in properties.items() if name not in files}}

    def build(self) -> HttpToolConfig:
        parameter: dict[str, Any] = {"type": "object", "properties": self._properties, "additionalProperties": False}
        if self._required:
            parameter["required"] = self._required
        try:
            return HttpToolConfig.model_validate(
                {
                    "toolName": self._operation.tool_name,
                    "description": _description(self._operation),
                    "method": self._operation.method,
                    "path": self._path,
                    "parameter": parameter,
                    "bindings": self._bindings,
                    "bodyEncoding": self._body_encoding,
                }
            )
        except ValidationError as exc:
            raise ConfigError(f"{self._where}: {reasons_of(exc)}") from None


def _parameter_schema(parameter: dict[str, Any]) -> Any:
    if "schema" in parameter:
        return parameter["schema"]
    content = parameter.get("content")
    if isinstance(content, dict) and content:
        media = next(iter(content.values()))
        if isinstance(media, dict) and "schema" in media:
            return media["schema"]
    return {"type": "string"}


def _body_media_type(content: dict[str, Any]) -> tuple[str, str] | None:
    """The media type to send a body as, preferring JSON, then a form, then multipart; None if none fits."""
    kinds = {media_type: media_type.split(";", 1)[0].strip().lower() for media_type in content}
    for encoding, accepts in (
        ("json", lambda kind: kind == "application/json" or kind.endswith("+json")),
        ("form", lambda kind: kind == "application/x-www-form-urlencoded"),
        ("multipart", lambda kind: kind == "multipart/form-data"),
    ):
        found = next((media_type for media_type, kind in kinds.items() if accepts(kind)), None)
        if found is not None:
            return found, encoding
    return None


def _is_file_field(field: Any) -> bool:
    """A multipart field holding a file's bytes (OpenAPI 3.0 ``format: binary``, 3.1 ``contentEncoding``)."""
    if not isinstance(field, dict):
        return False
    if field.get("type") == "array":
        return _is_file_field(field.get("items"))
    return field.get("format") in ("binary", "base64") or "contentEncoding" in field or "contentMediaType" in field


def _description(operation: Operation) -> str:
    parts = [
        text.strip()
        for text in (operation.operation.get("summary"), operation.operation.get("description"))
        if isinstance(text, str) and text.strip()
    ]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    text = "\n".join(parts) or f"{operation.method} {operation.path}"
    if operation.operation.get("deprecated") is True:
        text = f"(deprecated) {text}"
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return text
