"""The tools of an MCP server as Stepwise tools: listed at cold start, called through the MCP client."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from stepwise.config.credentials import SecretResolver
from stepwise.config.mcp_source import McpServerConfig
from stepwise.errors import ConfigError, ToolError
from stepwise.inputs.text_policy import clean_text, count_unencodable, replacement_note
from stepwise.models.messages import ToolSpec
from stepwise.patterns.metaschema import TOOL_SCHEMA_FORMATS
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
from stepwise.tools.guards import HostResolver, system_resolver
from stepwise.tools.mcp.client import McpClient
from stepwise.tools.openapi.names import model_safe_name
from stepwise.tools.openapi.schemas import SchemaNormaliser

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as RemoteTool

MAX_DESCRIPTION_CHARS = 4096


class McpTool:
    """One tool of an MCP server; ``spec.name`` is the name it is offered under (the server's, prefixed or
    renamed as configured, made model-safe) and ``remote_name`` the server's own, which calls use."""

    def __init__(self, client: McpClient, *, remote_name: str, spec: ToolSpec) -> None:
        self._client = client
        self.remote_name = remote_name
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Call the tool on the server; a tool-reported error becomes a failed result, not an exception.

        The call's idempotency key goes in the request's `_meta` (see `McpClient.call_tool`).
        """
        result = self._client.call_tool(self.remote_name, arguments, idempotency_key=context.idempotency_key)
        text = result_text(result)
        # Capping encodes the text, which a lone surrogate would break: the text is repaired first, and says so.
        replaced = count_unencodable(text)
        content, truncated = _capped(clean_text(text), self._client.config.max_response_bytes, self._client)
        if replaced:
            content = f"{content}\n{replacement_note(replaced)}"
        if result.is_error:
            return ToolResult(content=content, ok=False, error="the MCP tool reported an error", truncated=truncated)
        return ToolResult(content=content, truncated=truncated)


def load_mcp_tools(
    config: McpServerConfig, *, secret_resolver: SecretResolver, host_resolver: HostResolver = system_resolver
) -> list[McpTool]:
    """List the server's tools (those ``include`` names, when given) and wrap each as an `McpTool`, offered
    under its name with the server's ``prefix`` or ``rename`` applied.

    Raises `ConfigError` naming the server when it cannot be listed, when ``include`` or ``rename`` names a
    tool it does not offer, or when a tool's name or input schema cannot be offered to a model.
    """
    where = f"mcp {config.describe()}"
    client = McpClient(config, secret_resolver=secret_resolver, host_resolver=host_resolver)
    try:
        listed = client.list_tools()
    except ToolError as exc:
        raise ConfigError(f"{where}: the tools could not be listed: {exc}") from None
    by_name = {tool.name: tool for tool in listed}
    if config.include is not None:
        missing = [name for name in config.include if name not in by_name]
        if missing:
            raise ConfigError(f"{where}: include: the server has no tool {missing[0]!r}; it has {', '.join(by_name)}")
        chosen = [by_name[name] for name in config.include]
    else:
        chosen = list(by_name.values())
    unknown = [name for name in config.rename if name not in {remote.name for remote in chosen}]
    if unknown:
        offered = ", ".join(remote.name for remote in chosen)
        raise ConfigError(f"{where}: rename: the server offers no tool {unknown[0]!r}; it offers {offered}")
    tools: list[McpTool] = []
    owners: dict[str, str] = {}
    for remote in chosen:
        spec = _spec_for(remote, config.offered_name(remote.name), where=f"{where}: tool {remote.name}")
        if spec.name in owners:
            raise ConfigError(f"{where}: tools {owners[spec.name]} and {remote.name} both become {spec.name}")
        owners[spec.name] = remote.name
        tools.append(McpTool(client, remote_name=remote.name, spec=spec))
    return tools


def _spec_for(remote: RemoteTool, name: str, *, where: str) -> ToolSpec:
    schema = remote.input_schema
    # Inline the schema's own $defs: some model providers do not follow references.
    parameters = SchemaNormaliser(schema, where=where).normalise(schema)
    if parameters.get("type") != "object":
        raise ConfigError(f"{where}: the input schema must have type 'object'")
    try:
        Draft202012Validator.check_schema(parameters, format_checker=TOOL_SCHEMA_FORMATS)
    except SchemaError as exc:
        raise ConfigError(f"{where}: the input schema is not valid JSON Schema: {exc.message}") from None
    description = (remote.description or remote.title or remote.name).strip()
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return ToolSpec(name=model_safe_name(name), description=description, parameters=parameters)


def result_text(result: CallToolResult) -> str:
    """What a tool call returned, as text: text blocks as they are, other media described in one line."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "unknown")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} of type {getattr(block, 'mime_type', 'unknown')}, not shown]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            uri = getattr(resource, "uri", "")
            parts.append(text if isinstance(text, str) else f"[binary resource {uri}, not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind} content, not shown]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False, default=str)
    return "\n".join(parts) if parts else "(no output)"


def _capped(text: str, max_bytes: int, client: McpClient) -> tuple[str, bool]:
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text, False
    kept = encoded[:max_bytes].decode("utf-8", errors="ignore")
    # Redacted before the marker is added, so a secret cut in two is still recognised by its beginning.
    kept = client.redactor.redact(kept, cut_at_end=True)
    return f"{kept}…[truncated: the response was longer than {max_bytes} bytes]", True
