"""Configuration of an HTTP API and its endpoints, in the shape of the Higress ``ai-agent`` plugin's ``apis``.

```yaml
url: https://api.example.com/v1
apiKey: {in: header, name: X-API-Key, value: "ssm:/stepwise/weather"}
maxExecutionTime: 5000
internal: false
maxResponseBytes: 65536
tools:
  - toolName: get_weather
    description: Current weather for a city
    method: GET
    path: /weather/{city}
    parameter: {type: object, properties: {city: {type: string}, units: {type: string}}, required: [city]}
    bindings: {units: {in: header, name: X-Units}}
```

``bindings`` is a Stepwise addition: it says where an argument goes (``path``, ``query``, ``header``,
``cookie`` or ``body``), under which name and in which OpenAPI ``style``, when the default is not right.
By default a ``{placeholder}`` argument fills the path and every other argument goes to the query string
(GET, DELETE) or is a field of a JSON body (POST, PUT, PATCH). OpenAPI-imported tools are built with
bindings for every parameter.
"""

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from stepwise.config.control_chars import without_control_characters
from stepwise.config.tool_call_rules import (
    HEADER_NAME,
    MAX_APPROVAL_TIMEOUT_SECONDS,
    RESERVED_HEADERS,
    SAFE_METHODS,
    TOOL_MODEL_CONFIG,
    ApprovalRule,
    EffectRule,
)
from stepwise.config.tool_limits import (
    DEFAULT_MAX_EXECUTION_MS,
    DEFAULT_MAX_RESPONSE_BYTES,
    TOOL_NAME_PATTERN,
    MaxExecutionMs,
    MaxResponseBytes,
)
from stepwise.config.url_checks import validated_http_url

# httpx and jsonschema are imported where a URL or a tool schema is checked, not here: every handler
# imports these models, and a configuration without HTTP tools or URLs needs neither (cold start).

PATH_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
ArgumentLocation = Literal["path", "query", "header", "cookie", "body"]
ParameterStyle = Literal["simple", "label", "matrix", "form", "spaceDelimited", "pipeDelimited", "deepObject"]
# The styles OpenAPI allows in each location, the first being the default.
STYLES_BY_LOCATION: dict[str, tuple[str, ...]] = {
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject"),
    "header": ("simple",),
    "cookie": ("form",),
    "body": ("form",),
}

# Validation context flag: the tools given to an `ApiConfig` are `HttpToolConfig`s already validated.
SCHEMAS_CHECKED = "schemas_checked"


class ApiKeyConfig(BaseModel):
    """Where and how an API's credential is sent; ``value`` is a literal or a secret reference."""

    model_config = TOOL_MODEL_CONFIG

    location: Literal["header", "query", "bearer"] = Field(alias="in")
    name: str | None = Field(default=None, min_length=1, max_length=128, validate_default=True)
    value: str = Field(min_length=1, repr=False)

    # A field validator, not a model validator: pydantic shows a failing validator's input, and the
    # input of a model validator here would include the (possibly literal) key.
    @field_validator("name")
    @classmethod
    def _name_fits_location(cls, name: str | None, info: ValidationInfo) -> str | None:
        location = info.data.get("location")
        if location in ("header", "query") and not name:
            raise ValueError(f"apiKey.name is required when apiKey.in is {location!r}")
        if location == "header" and name and not HEADER_NAME.fullmatch(name):
            raise ValueError(f"apiKey.name {name!r} is not a valid HTTP header name")
        return None if name is None else without_control_characters(name, what="apiKey.name")

    # A literal key, or a secret reference; either way it is sent as it is (a resolved secret is checked
    # again when it is sent).
    @field_validator("value")
    @classmethod
    def _sendable_value(cls, value: str) -> str:
        return without_control_characters(value, what="apiKey.value")


class ArgumentBinding(BaseModel):
    """Where one argument goes in the request, its name there, and how it is written (OpenAPI's style).

    ``name`` defaults to the argument's own name. For ``in: body`` without a name the argument *is* the
    JSON body (any JSON value); with a name it is one field of a JSON object body. ``style``, ``explode``
    and ``allowReserved`` are OpenAPI's, with its defaults: ``simple`` in the path and headers, ``form``
    (explode) in the query and cookies; the query also takes ``spaceDelimited``, ``pipeDelimited`` and
    ``deepObject`` (nested objects and arrays in brackets, ``a[b][0]=v``), the path ``label`` and
    ``matrix`` (`stepwise.tools.parameter_styles`). ``multi_segment`` (GitHub's ``x-multi-segment``) lets a
    path argument span segments: its ``/`` are sent as they are, each segment between them escaped (a
    file path in ``/contents/{path}``); otherwise a ``/`` is sent as ``%2F``. A ``.`` or ``..`` segment is
    refused either way: servers resolve it even when percent-encoded.
    """

    model_config = TOOL_MODEL_CONFIG

    location: ArgumentLocation = Field(alias="in")
    name: str | None = Field(default=None, min_length=1, max_length=256)
    style: ParameterStyle | None = None
    explode: bool | None = None
    allow_reserved: bool = Field(default=False, alias="allowReserved")
    multi_segment: bool = Field(default=False, alias="multiSegment")

    @model_validator(mode="after")
    def _style_fits_location(self) -> "ArgumentBinding":
        allowed = STYLES_BY_LOCATION[self.location]
        if self.style is not None and self.style not in allowed:
            raise ValueError(f"style {self.style} is not used in the {self.location}; use {' or '.join(allowed)}")
        if self.allow_reserved and self.location != "query":
            raise ValueError("allowReserved applies to query parameters only")
        return self

    @property
    def effective_style(self) -> str:
        """The style, or the location's default (OpenAPI's)."""
        return self.style or STYLES_BY_LOCATION[self.location][0]

    @property
    def effective_explode(self) -> bool:
        """Explode, or its default: true for ``form``, false for every other style (OpenAPI's)."""
        return self.explode if self.explode is not None else self.effective_style == "form"


class HttpToolConfig(BaseModel):
    """One endpoint of an API offered to the model as a tool."""

    model_config = TOOL_MODEL_CONFIG

    # None: as its API says
    requires_approval: bool | None = Field(default=None, alias="requiresApproval")
    side_effects: bool | None = Field(default=None, alias="sideEffects")
    approval_timeout_seconds: int | None = Field(
        default=None, alias="approvalTimeoutSeconds", ge=1, le=MAX_APPROVAL_TIMEOUT_SECONDS
    )

    tool_name: str = Field(alias="toolName", pattern=TOOL_NAME_PATTERN)
    description: str = Field(default="", max_length=4096)
    method: HttpMethod = "GET"
    path: str = ""
    parameter: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    bindings: dict[str, ArgumentBinding] = Field(default_factory=dict)
    # How the body is sent: JSON, application/x-www-form-urlencoded (brackets for nesting), or multipart fields.
    body_encoding: Literal["json", "form", "multipart"] = Field(default="json", alias="bodyEncoding")

    @field_validator("method", mode="before")
    @classmethod
    def _upper_case_method(cls, method: object) -> object:
        return method.upper() if isinstance(method, str) else method

    @field_validator("parameter", mode="before")
    @classmethod
    def _schema_given_as_json_text(cls, parameter: object) -> object:
        # Higress articles write the schema as a JSON string inside the YAML; it is read as that schema.
        if not isinstance(parameter, str):
            return parameter
        try:
            schema = json.loads(parameter)
        except ValueError as exc:
            raise ValueError(f"a string parameter must hold a JSON schema, but it is not JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise ValueError("a string parameter must hold a JSON schema object")
        return schema

    @model_validator(mode="after")
    def _path_and_schema_agree(self, info: ValidationInfo) -> "HttpToolConfig":
        where = f"tool {self.tool_name}"
        without_control_characters(self.path, what=f"{where}: path")
        if self.path and not self.path.startswith("/"):
            raise ValueError(f"{where}: path must start with '/'")
        if "?" in self.path or "#" in self.path:
            raise ValueError(f"{where}: path must not hold a query or fragment; declare parameters instead")
        if self.parameter.get("type") != "object":
            raise ValueError(f"{where}: parameter must be a JSON schema with type 'object'")
        # The metaschema check is the costliest part of a tool's validation; an endpoint already
        # checked on its own is not checked again when its API is validated (SCHEMAS_CHECKED).
        if not (info.context or {}).get(SCHEMAS_CHECKED):
            from jsonschema.exceptions import SchemaError

            from stepwise.config.schema_check import check_parameter_schema

            try:
                check_parameter_schema(self.parameter)
            except SchemaError as exc:
                raise ValueError(f"{where}: parameter is not a valid JSON schema: {exc.message}") from None
        properties = self.parameter.get("properties", {})
        for placeholder in self.path_parameters:
            if not re.fullmatch(r"[A-Za-z0-9_-]+", placeholder):
                raise ValueError(f"{where}: path placeholder {{{placeholder}}} is not a parameter name")
            if placeholder not in properties:
                raise ValueError(f"{where}: path placeholder {{{placeholder}}} is not a property of parameter")
        outside_placeholders = PATH_PLACEHOLDER.sub("", self.path)
        if "{" in outside_placeholders or "}" in outside_placeholders:
            raise ValueError(f"{where}: path has an unbalanced '{{' or '}}'")
        self._check_bindings(where, properties)
        return self

    def _check_bindings(self, where: str, properties: dict[str, Any]) -> None:
        placeholders = set(self.path_parameters)
        for name, binding in self.bindings.items():
            at = f"{where}: bindings.{name}"
            if name not in properties:
                raise ValueError(f"{at}: {name} is not a property of parameter")
            if (binding.location == "path") != (name in placeholders):
                raise ValueError(f"{at}: only a {{placeholder}} of the path is bound to the path, and always is")
            if binding.multi_segment and binding.location != "path":
                raise ValueError(f"{at}: multi_segment applies to a path argument only")
            if binding.location == "body" and self.method == "GET":
                raise ValueError(f"{at}: a GET request has no body")
            if binding.location in ("header", "cookie"):
                header = binding.name or name
                if not HEADER_NAME.fullmatch(header):
                    raise ValueError(f"{at}: {header!r} is not a valid HTTP {binding.location} name")
                if binding.location == "header" and header.lower() in RESERVED_HEADERS:
                    raise ValueError(f"{at}: the {header} header is set by the HTTP client, not by arguments")
        body = [name for name, binding in self.bindings.items() if binding.location == "body"]
        whole_body = [name for name in body if not self.bindings[name].name]
        if whole_body and len(body) > 1:
            raise ValueError(f"{where}: bindings: {whole_body[0]} is the whole body, so no other argument can be")

    @property
    def path_parameters(self) -> list[str]:
        """Names of the ``{placeholders}`` in the path, in order."""
        return PATH_PLACEHOLDER.findall(self.path)


class ApiConfig(ApprovalRule, EffectRule):
    """A base URL, how to authenticate to it, its limits, and the tools it serves.

    `requires_approval` and `side_effects` apply to every tool of the API unless a tool says otherwise.
    """

    model_config = TOOL_MODEL_CONFIG

    url: str
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    max_execution_time: MaxExecutionMs = DEFAULT_MAX_EXECUTION_MS
    internal: bool = False
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    tools: list[HttpToolConfig] = Field(min_length=1)

    @field_validator("url")
    @classmethod
    def _http_base_url(cls, url: str) -> str:
        return validated_http_url(url)

    # A field validator so that a failure shows the tools, not the whole API with its key.
    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[HttpToolConfig], info: ValidationInfo) -> list[HttpToolConfig]:
        seen: set[str] = set()
        for tool in tools:
            if tool.tool_name in seen:
                raise ValueError(f"api {info.data.get('url')}: tool {tool.tool_name}: toolName is used twice")
            seen.add(tool.tool_name)
        return tools

    def tool_has_side_effects(self, tool: HttpToolConfig) -> bool:
        """Whether a call of `tool` may change something: its own setting, else the API's, else its method."""
        for setting in (tool.side_effects, self.side_effects):
            if setting is not None:
                return setting
        return tool.method not in SAFE_METHODS

    def tool_approval_timeout(self, tool: HttpToolConfig) -> int | None:
        """The wait for approval of `tool`'s calls (its own setting, else the API's), or None."""
        required = self.requires_approval if tool.requires_approval is None else tool.requires_approval
        if not required:
            return None
        return tool.approval_timeout_seconds or self.approval_timeout_seconds
