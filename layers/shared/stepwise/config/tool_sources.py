"""Configuration of every tool source: HTTP APIs (the Higress ``ai-agent`` ``apis`` shape), OpenAPI
documents, MCP servers, remote A2A agents, built-in tools and deployer Python modules.

```yaml
apis:                       # see stepwise.config.http_api
  - url: https://api.example.com/v1
    apiKey: {in: header, name: X-API-Key, value: "ssm:/stepwise/weather"}
    tools: [{toolName: get_weather, method: GET, path: /weather/{city}, parameter: {...}}]
openapi:
  - source: petstore.yaml            # a file in the config dir, s3://bucket/key, or an https:// URL
    baseUrl: https://petstore.example.com/v2   # default: the document's servers[0].url
    include: {tags: [pets]}          # and/or operations: [operationId, ...]
    exclude: {operations: [deletePet]}
    apiKey: {in: bearer, value: "secretsmanager:petstore#token"}
mcp:
  - url: https://mcp.example.com/mcp
    apiKey: {in: bearer, value: "ssm:/stepwise/mcp-token"}
    timeoutSeconds: 20
    include: [search_docs]
a2a:                                 # see stepwise.config.a2a_source
  - url: https://agent.example.com
    apiKey: {in: bearer, value: "ssm:/stepwise/agent-token"}
builtin: [current_time, calculator]
python: [my_tools]
maxSchemaBytes: 16384               # a tool spec above this is trimmed (annotations first) or left out
```

Keys are camelCase as above; snake_case names are accepted too. Validation messages name the source (API
URL, OpenAPI source, MCP or A2A URL), the tool and the field. Inputs are hidden from pydantic's messages because
``apiKey.value`` may be a literal credential; a model that embeds `ToolsConfig` should hide them too
(pydantic applies the outermost model's setting).
"""

import importlib
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from stepwise.config.lazy_section import lazy_section
from stepwise.config.tool_call_rules import TOOL_MODEL_CONFIG, ApprovalRule, EffectRule
from stepwise.config.tool_limits import (
    DEFAULT_MAX_EXECUTION_MS,
    DEFAULT_MAX_RESPONSE_BYTES,
    PYTHON_MODULE_NAME,
    TOOL_NAME_PATTERN,
)
from stepwise.errors import ConfigError

if TYPE_CHECKING:
    from stepwise.config.a2a_source import A2aAgentConfig
    from stepwise.config.http_api import PATH_PLACEHOLDER, ApiConfig, ApiKeyConfig, ArgumentBinding, HttpToolConfig
    from stepwise.config.mcp_source import McpServerConfig
    from stepwise.config.openapi_source import DEFAULT_MAX_DOCUMENT_BYTES, OpenApiSourceConfig, OperationFilter

    _Api = ApiConfig
    _OpenApiSource = OpenApiSourceConfig
    _McpServer = McpServerConfig
    _A2aAgent = A2aAgentConfig
else:
    # Each source's model loads with the first file that lists such a source (`lazy_section`): a file of
    # built-in tools, the default, loads none of them (cold start).
    _Api = lazy_section("stepwise.config.http_api", "ApiConfig")
    _OpenApiSource = lazy_section("stepwise.config.openapi_source", "OpenApiSourceConfig")
    _McpServer = lazy_section("stepwise.config.mcp_source", "McpServerConfig")
    _A2aAgent = lazy_section("stepwise.config.a2a_source", "A2aAgentConfig")

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_EXECUTION_MS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "PATH_PLACEHOLDER",
    "TOOL_NAME_PATTERN",
    "A2aAgentConfig",
    "ApiConfig",
    "ApiKeyConfig",
    "ApprovalRule",
    "ArgumentBinding",
    "HttpToolConfig",
    "McpServerConfig",
    "OpenApiSourceConfig",
    "OperationFilter",
    "PythonModuleConfig",
    "ToolsConfig",
    "parse_tools_config",
]

# The sources' models, still importable from here: each from its own module, when first asked for.
_SOURCE_MODULES = {
    "A2aAgentConfig": "a2a_source",
    "ApiConfig": "http_api",
    "ApiKeyConfig": "http_api",
    "ArgumentBinding": "http_api",
    "HttpToolConfig": "http_api",
    "PATH_PLACEHOLDER": "http_api",
    "McpServerConfig": "mcp_source",
    "DEFAULT_MAX_DOCUMENT_BYTES": "openapi_source",
    "OpenApiSourceConfig": "openapi_source",
    "OperationFilter": "openapi_source",
}


def __getattr__(name: str) -> Any:
    if name not in _SOURCE_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"stepwise.config.{_SOURCE_MODULES[name]}"), name)


# A tool's spec (name, description, parameters as compact JSON) above this is trimmed, or left out
# (stepwise.tools.tool_budget). 16 KB is about 4,000 tokens, sent with every model call.
DEFAULT_MAX_SCHEMA_BYTES = 16 * 1024
MIN_SCHEMA_BYTES = 1024
MAX_SCHEMA_BYTES_LIMIT = 1024 * 1024


class PythonModuleConfig(ApprovalRule, EffectRule):
    """A Python module of tools, given as a mapping to set how its calls are approved."""

    module: str

    @field_validator("module")
    @classmethod
    def _module_name(cls, module: str) -> str:
        if not PYTHON_MODULE_NAME.fullmatch(module):
            raise ValueError(f"{module!r} is not a Python module name")
        return module


class ToolsConfig(BaseModel):
    """Every tool source of a profile: HTTP APIs, OpenAPI documents, MCP servers, A2A agents, built-ins, Python
    modules."""

    model_config = TOOL_MODEL_CONFIG

    apis: list[_Api] = Field(default_factory=list)
    openapi: list[_OpenApiSource] = Field(default_factory=list)
    mcp: list[_McpServer] = Field(default_factory=list)
    a2a: list[_A2aAgent] = Field(default_factory=list)
    builtin: list[str] = Field(default_factory=list)
    python: list[str | PythonModuleConfig] = Field(default_factory=list)
    max_schema_bytes: int = Field(
        default=DEFAULT_MAX_SCHEMA_BYTES, alias="maxSchemaBytes", ge=MIN_SCHEMA_BYTES, le=MAX_SCHEMA_BYTES_LIMIT
    )
    replay_safe: list[str] = Field(
        default_factory=list,
        alias="replaySafe",
        description="Tools a replay with live tools may call although they are not read-only (not GET, HEAD or "
        "OPTIONS, nor a built-in): calling them again changes nothing that matters.",
    )

    @field_validator("builtin")
    @classmethod
    def _builtin_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(TOOL_NAME_PATTERN, name):
                raise ValueError(f"builtin: {name!r} is not a tool name")
        return names

    @field_validator("python")
    @classmethod
    def _module_names(cls, modules: list[str | PythonModuleConfig]) -> list[str | PythonModuleConfig]:
        names = [module if isinstance(module, str) else module.module for module in modules]
        for name in names:
            if not PYTHON_MODULE_NAME.fullmatch(name):
                raise ValueError(f"python: {name!r} is not a Python module name")
        if len(set(names)) != len(names):
            raise ValueError("python: a module is listed twice")
        return modules

    def python_modules(self) -> list[PythonModuleConfig]:
        """The Python modules, each with its approval rule (a bare name needs no approval)."""
        return [PythonModuleConfig(module=entry) if isinstance(entry, str) else entry for entry in self.python]

    @model_validator(mode="after")
    def _unique_tool_names(self) -> "ToolsConfig":
        # OpenAPI, MCP and A2A tool names are known only once imported; the registry checks those.
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

    Raises `ConfigError` whose message names ``source``, then for each problem the tool source (an API
    by URL, an OpenAPI source, an MCP server or A2A agent by URL), the tool (by name) and the field, with the reason.
    """
    try:
        return ToolsConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            _describe_error(data, error["loc"], error["msg"].removeprefix("Value error, ")) for error in exc.errors()
        )
        raise ConfigError(f"{source}: {problems}") from None


_LABELLED_LISTS = ("apis", "tools", "openapi", "mcp", "a2a")


def _describe_error(data: object, loc: tuple[int | str, ...], message: str) -> str:
    """Turn pydantic's ``('apis', 0, 'tools', 1, 'path')`` into ``api <url> > tool <name> > path``."""
    parts: list[str] = []
    node: object = data
    index = 0
    while index < len(loc):
        key = loc[index]
        child = _child(node, key)
        if key in _LABELLED_LISTS and index + 1 < len(loc) and isinstance(loc[index + 1], int):
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
    fields = item if isinstance(item, dict) else {}
    if collection == "apis":
        url = fields.get("url")
        return f"api {url}" if isinstance(url, str) else f"apis[{position}]"
    if collection == "openapi":
        source = fields.get("source") or fields.get("name")
        return f"openapi {source}" if isinstance(source, str) else f"openapi[{position}]"
    if collection == "mcp":
        url = fields.get("url", fields.get("command"))
        return f"mcp {url}" if isinstance(url, str) else f"mcp[{position}]"
    if collection == "a2a":
        url = fields.get("url")
        return f"a2a {url}" if isinstance(url, str) else f"a2a[{position}]"
    name = fields.get("toolName") or fields.get("tool_name")
    return f"tool {name}" if isinstance(name, str) else f"tools[{position}]"
