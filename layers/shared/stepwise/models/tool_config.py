"""Configuration of tools, in the shape of the Higress ``ai-agent`` plugin's ``apis`` plus Stepwise keys.

```yaml
apis:
  - url: https://api.example.com/v1
    apiKey: {in: header, name: X-API-Key, value: "ssm:/stepwise/weather"}
    maxExecutionTime: 5000
    internal: false
    maxResponseBytes: 65536
    tools:
      - toolName: get_weather
        description: Current weather for a city
        method: GET
        path: /weather/{city}
        parameter: {type: object, properties: {city: {type: string}}, required: [city]}
builtin: [current_time, calculator]
python: [my_tools]
```

Keys are camelCase as above; snake_case names are accepted too. Validation messages name the API (by
URL), the tool and the field. Inputs are hidden from pydantic's messages because ``apiKey.value`` may
be a literal credential; a model that embeds `ToolsConfig` should hide them too (pydantic applies the
outermost model's setting).
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from stepwise.errors import ConfigError

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
PATH_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
PYTHON_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

DEFAULT_MAX_EXECUTION_MS = 5000
MAX_EXECUTION_MS_LIMIT = 60_000
DEFAULT_MAX_RESPONSE_BYTES = 65_536
MAX_RESPONSE_BYTES_LIMIT = 10 * 1024 * 1024

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, hide_input_in_errors=True, frozen=True)


class ApiKeyConfig(BaseModel):
    """Where and how an API's credential is sent; ``value`` is a literal or a secret reference."""

    model_config = _CONFIG

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
        return name


class HttpToolConfig(BaseModel):
    """One endpoint of an API offered to the model as a tool."""

    model_config = _CONFIG

    tool_name: str = Field(alias="toolName", pattern=TOOL_NAME_PATTERN)
    description: str = Field(default="", max_length=4096)
    method: HttpMethod = "GET"
    path: str = ""
    parameter: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("method", mode="before")
    @classmethod
    def _upper_case_method(cls, method: object) -> object:
        return method.upper() if isinstance(method, str) else method

    @model_validator(mode="after")
    def _path_and_schema_agree(self) -> HttpToolConfig:
        where = f"tool {self.tool_name}"
        if self.path and not self.path.startswith("/"):
            raise ValueError(f"{where}: path must start with '/'")
        if "?" in self.path or "#" in self.path:
            raise ValueError(f"{where}: path must not hold a query or fragment; declare parameters instead")
        if self.parameter.get("type") != "object":
            raise ValueError(f"{where}: parameter must be a JSON schema with type 'object'")
        try:
            Draft202012Validator.check_schema(self.parameter)
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
        return self

    @property
    def path_parameters(self) -> list[str]:
        """Names of the ``{placeholders}`` in the path, in order."""
        return PATH_PLACEHOLDER.findall(self.path)


class ApiConfig(BaseModel):
    """A base URL, how to authenticate to it, its limits, and the tools it serves."""

    model_config = _CONFIG

    url: str
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    max_execution_time: int = Field(
        default=DEFAULT_MAX_EXECUTION_MS, alias="maxExecutionTime", gt=0, le=MAX_EXECUTION_MS_LIMIT
    )
    internal: bool = False
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, alias="maxResponseBytes", gt=0, le=MAX_RESPONSE_BYTES_LIMIT
    )
    tools: list[HttpToolConfig] = Field(min_length=1)

    @field_validator("url")
    @classmethod
    def _http_base_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"url {url!r} must use http or https")
        if not parts.hostname:
            raise ValueError(f"url {url!r} has no host")
        if parts.username is not None or parts.password is not None:
            raise ValueError(f"url of {parts.hostname} must not hold credentials; use apiKey")
        if parts.query or parts.fragment:
            raise ValueError(f"url {url!r} must not hold a query or fragment")
        try:
            parts.port  # noqa: B018 - reading it validates the port
        except ValueError:
            raise ValueError(f"url {url!r} has an invalid port") from None
        return url.rstrip("/")

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


class ToolsConfig(BaseModel):
    """Every tool source of a profile: HTTP APIs, built-in tools by name, deployer Python modules."""

    model_config = _CONFIG

    apis: list[ApiConfig] = Field(default_factory=list)
    builtin: list[str] = Field(default_factory=list)
    python: list[str] = Field(default_factory=list)

    @field_validator("builtin")
    @classmethod
    def _builtin_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(TOOL_NAME_PATTERN, name):
                raise ValueError(f"builtin: {name!r} is not a tool name")
        return names

    @field_validator("python")
    @classmethod
    def _module_names(cls, modules: list[str]) -> list[str]:
        for module in modules:
            if not PYTHON_MODULE_NAME.fullmatch(module):
                raise ValueError(f"python: {module!r} is not a Python module name")
        if len(set(modules)) != len(modules):
            raise ValueError("python: a module is listed twice")
        return modules

    @model_validator(mode="after")
    def _unique_tool_names(self) -> ToolsConfig:
        owner: dict[str, str] = {}
        for api in self.apis:
            for tool in api.tools:
                if tool.tool_name in owner:
                    raise ValueError(
                        f"api {api.url}: tool {tool.tool_name}: toolName is already used by {owner[tool.tool_name]}"
                    )
                owner[tool.tool_name] = f"api {api.url}"
        for name in self.builtin:
            if name in owner:
                raise ValueError(f"builtin: tool {name} is already used by {owner[name]}")
            owner[name] = "builtin"
        return self


def parse_tools_config(data: object, *, source: str = "tools config") -> ToolsConfig:
    """Validate raw configuration (parsed YAML or JSON) into a `ToolsConfig`.

    Raises `ConfigError` whose message names ``source``, then for each problem the API (by URL), the
    tool (by name) and the field, with the reason.
    """
    try:
        return ToolsConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            _describe_error(data, error["loc"], error["msg"].removeprefix("Value error, ")) for error in exc.errors()
        )
        raise ConfigError(f"{source}: {problems}") from None


def _describe_error(data: object, loc: tuple[int | str, ...], message: str) -> str:
    """Turn pydantic's ``('apis', 0, 'tools', 1, 'path')`` into ``api <url> > tool <name> > path``."""
    parts: list[str] = []
    node: object = data
    index = 0
    while index < len(loc):
        key = loc[index]
        child = _child(node, key)
        if key in ("apis", "tools") and index + 1 < len(loc) and isinstance(loc[index + 1], int):
            item = _child(child, loc[index + 1])
            parts.append(_label(str(key), item, loc[index + 1]))
            node = item
            index += 2
            continue
        parts.append(str(key))
        node = child
        index += 1
    where = " > ".join(parts) if parts else "(top level)"
    return f"{where}: {message}"


def _child(node: object, key: int | str) -> object:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


def _label(collection: str, item: object, position: int | str) -> str:
    if collection == "apis":
        url = item.get("url") if isinstance(item, dict) else None
        return f"api {url}" if isinstance(url, str) else f"apis[{position}]"
    name = (item.get("toolName") or item.get("tool_name")) if isinstance(item, dict) else None
    return f"tool {name}" if isinstance(name, str) else f"tools[{position}]"
