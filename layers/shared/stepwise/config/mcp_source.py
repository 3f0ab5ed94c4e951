"""Configuration of an MCP server as a tool source: how it is reached, what of it is offered, under which names.

```yaml
mcp:
  - url: https://mcp.example.com/mcp
    apiKey: {in: bearer, value: "ssm:/stepwise/mcp-token"}
    include: [search_docs]
    prefix: docs_                 # every tool offered as docs_<its name>
    rename: {search: find_pages}  # or one tool under another name
```
"""

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from stepwise.config.http_api import (
    DEFAULT_MAX_RESPONSE_BYTES,
    TOOL_NAME_PATTERN,
    ApiKeyConfig,
    MaxResponseBytes,
)
from stepwise.config.remote_headers import checked_remote_headers, key_outside_url
from stepwise.config.tool_call_rules import TOOL_MODEL_CONFIG, ApprovalRule, EffectRule
from stepwise.config.url_checks import validated_http_url

DEFAULT_MCP_TIMEOUT_SECONDS = 30.0
MAX_MCP_TIMEOUT_SECONDS = 300.0
DEFAULT_MCP_IDLE_SECONDS = 300.0
MAX_MCP_IDLE_SECONDS = 3600.0
# A prefix leaves room for the server's own name within a tool name's 64 characters.
TOOL_PREFIX_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"


McpTransport = Literal["streamable-http", "sse", "stdio"]


class McpServerConfig(ApprovalRule, EffectRule):
    """An MCP server; its tools are listed at cold start.

    A server with a ``url`` is reached over streamable HTTP, or over the legacy HTTP+SSE transport with
    ``transport: sse``. A server with a ``command`` (and ``args``, ``env``, ``cwd``) is run as a
    subprocess and spoken to over stdio: one process per server per Python process (per Lambda
    container), started on first use, kept between calls and stopped after ``idleTimeoutSeconds`` unused.
    ``headers`` are sent as they are (not secrets: they are not redacted); a credential goes in ``apiKey``
    (``in: header`` or ``in: bearer``). ``include`` names the server's tools to offer (all when absent).

    ``prefix`` offers every tool as ``<prefix><its name>``, and ``rename`` one tool under a name of its own
    (it wins over the prefix), so that two servers with a tool of one name can be combined; the server is
    always called by its own name. ``include``, ``rename``'s keys and approvals name the server's tools.
    """

    model_config = TOOL_MODEL_CONFIG

    url: str | None = None
    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    transport: McpTransport | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    internal: bool = False
    timeout_seconds: float = Field(
        default=DEFAULT_MCP_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_MCP_TIMEOUT_SECONDS
    )
    include: list[str] | None = Field(default=None, min_length=1)
    prefix: str | None = Field(default=None, pattern=TOOL_PREFIX_PATTERN)
    rename: dict[str, str] = Field(default_factory=dict)
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    # A stdio server's process is kept between calls; unused this long, it is stopped (started again on use).
    idle_timeout_seconds: float = Field(
        default=DEFAULT_MCP_IDLE_SECONDS, alias="idleTimeoutSeconds", gt=0, le=MAX_MCP_IDLE_SECONDS
    )

    @field_validator("rename")
    @classmethod
    def _tool_names(cls, rename: dict[str, str]) -> dict[str, str]:
        for offered in rename.values():
            if not re.fullmatch(TOOL_NAME_PATTERN, offered):
                raise ValueError(f"rename: {offered!r} is not a tool name (letters, digits, _ and -, 1 to 64)")
        repeated = sorted({name for name in rename.values() if list(rename.values()).count(name) > 1})
        if repeated:
            raise ValueError(f"rename: {', '.join(repeated)} is given to more than one tool")
        return rename

    def offered_name(self, name: str) -> str:
        """The name the model is offered for the server's tool ``name``, before it is made model-safe."""
        return self.rename.get(name) or f"{self.prefix or ''}{name}"

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return None if url is None else validated_http_url(url)

    @model_validator(mode="after")
    def _one_way_to_reach(self) -> "McpServerConfig":
        if (self.url is None) == (self.command is None):
            raise ValueError(
                "give exactly one of 'url' (an HTTP server) or 'command' (a stdio server run as a subprocess)"
            )
        if self.command is not None:
            if self.transport not in (None, "stdio"):
                raise ValueError(f"transport: {self.transport} needs a 'url'; a server given by 'command' speaks stdio")
            if self.headers or self.api_key is not None:
                raise ValueError(
                    "headers and apiKey are for an HTTP server; give a stdio server its credential in 'env'"
                )
        else:
            if self.args or self.env or self.cwd is not None:
                raise ValueError("args, env and cwd are for a stdio server given by 'command'")
            if self.transport == "stdio":
                raise ValueError("transport: stdio needs a 'command' instead of a 'url'")
        return self

    @property
    def kind(self) -> McpTransport:
        """The transport used: stdio for a command, else ``transport`` (streamable HTTP by default)."""
        if self.command is not None:
            return "stdio"
        return self.transport or "streamable-http"

    def describe(self) -> str:
        """The server as configured: its URL, or its command line."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])

    @field_validator("headers")
    @classmethod
    def _plain_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return checked_remote_headers(headers, client="MCP", client_owns=lambda name: name.startswith("mcp-"))

    @field_validator("api_key")
    @classmethod
    def _key_not_in_url(cls, key: ApiKeyConfig | None) -> ApiKeyConfig | None:
        return key_outside_url(key, source="an MCP server")
