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

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from stepwise.config.a2a_source import A2aAgentConfig
from stepwise.config.http_api import (
    DEFAULT_MAX_EXECUTION_MS,
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_EXECUTION_MS_LIMIT,
    MAX_RESPONSE_BYTES_LIMIT,
    PATH_PLACEHOLDER,
    PYTHON_MODULE_NAME,
    TOOL_NAME_PATTERN,
    ApiConfig,
    ApiKeyConfig,
    ArgumentBinding,
    HttpToolConfig,
)
from stepwise.config.mcp_source import McpServerConfig
from stepwise.config.tool_call_rules import TOOL_MODEL_CONFIG, ApprovalRule, EffectRule
from stepwise.config.url_checks import validated_http_url
from stepwise.errors import ConfigError

__all__ = [
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

# The same cap for a file, an S3 object and a URL: above GitHub's REST description (13 MB), the largest
# public one Stepwise is tested with; the limit keeps a hostile source from exhausting a Lambda's memory.
DEFAULT_MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_DOCUMENT_BYTES_LIMIT = 256 * 1024 * 1024
# A tool's spec (name, description, parameters as compact JSON) above this is trimmed, or left out
# (stepwise.tools.tool_budget). 16 KB is about 4,000 tokens, sent with every model call.
DEFAULT_MAX_SCHEMA_BYTES = 16 * 1024
MIN_SCHEMA_BYTES = 1024
MAX_SCHEMA_BYTES_LIMIT = 1024 * 1024
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class OperationFilter(BaseModel):
    """OpenAPI operations chosen by tag or by operationId (or, without one, by the generated tool name)."""

    model_config = TOOL_MODEL_CONFIG

    tags: list[str] = Field(default_factory=list)
    operations: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_something(self) -> "OperationFilter":
        if not self.tags and not self.operations:
            raise ValueError("name at least one tag or operation")
        return self


class OpenApiSourceConfig(ApprovalRule, EffectRule):
    """An OpenAPI 3.0/3.1 document whose operations become tools.

    ``source`` is a file in the config directory, ``s3://bucket/key`` or an ``https://`` URL (``http://``
    only for an ``internal`` source); ``document`` is the document inline (what a Higress ai-agent
    configuration carries). Exactly one of the two is given. ``name`` labels an inline document in
    messages. ``maxDocumentBytes`` caps the document whatever its source. ``onUnsupported`` says what an
    operation the importer cannot offer does: ``skip`` (the default) leaves it out and reports why,
    ``fail`` refuses the whole document.
    """

    model_config = TOOL_MODEL_CONFIG

    source: str | None = Field(default=None, min_length=1)
    document: dict[str, Any] | None = Field(default=None, repr=False)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    base_url: str | None = Field(default=None, alias="baseUrl")
    include: OperationFilter | None = None
    exclude: OperationFilter | None = None
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    internal: bool = False
    max_execution_time: int = Field(
        default=DEFAULT_MAX_EXECUTION_MS, alias="maxExecutionTime", gt=0, le=MAX_EXECUTION_MS_LIMIT
    )
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, alias="maxResponseBytes", gt=0, le=MAX_RESPONSE_BYTES_LIMIT
    )
    max_document_bytes: int = Field(
        default=DEFAULT_MAX_DOCUMENT_BYTES, alias="maxDocumentBytes", gt=0, le=MAX_DOCUMENT_BYTES_LIMIT
    )
    on_unsupported: Literal["skip", "fail"] = Field(default="skip", alias="onUnsupported")

    @field_validator("base_url")
    @classmethod
    def _http_base_url(cls, url: str | None) -> str | None:
        return None if url is None else validated_http_url(url, what="baseUrl")

    @model_validator(mode="after")
    def _one_known_source(self) -> "OpenApiSourceConfig":
        if (self.source is None) == (self.document is None):
            raise ValueError("give exactly one of 'source' (a file, s3:// or https:// URL) or 'document' (inline)")
        source = self.source or ""
        if source.startswith("s3://"):
            bucket, _, key = source.removeprefix("s3://").partition("/")
            if not bucket or not key:
                raise ValueError(f"source {source!r} must be s3://bucket/key")
        elif source.startswith("http://") and not self.internal:
            raise ValueError(f"source {source!r}: only an internal source may be fetched over plain http")
        elif source.startswith(("http://", "https://")):
            validated_http_url(source, what="source")
        elif _URL_SCHEME.match(source):
            raise ValueError(f"source {source!r} must be a file in the config directory, s3:// or https://")
        return self

    def describe(self) -> str:
        """The source as configured (a file, an S3 object or a URL), else its name or ``inline document``."""
        return self.source or self.name or "inline document"


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

    apis: list[ApiConfig] = Field(default_factory=list)
    openapi: list[OpenApiSourceConfig] = Field(default_factory=list)
    mcp: list[McpServerConfig] = Field(default_factory=list)
    a2a: list[A2aAgentConfig] = Field(default_factory=list)
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
