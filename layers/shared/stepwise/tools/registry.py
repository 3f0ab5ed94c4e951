"""The tools of a profile, by name, built from a `ToolsConfig`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepwise.config.credentials import SecretResolver
from stepwise.config.redaction import Redactor, redact_known_secrets
from stepwise.config.tool_call_rules import SAFE_METHODS
from stepwise.config.tool_sources import ToolsConfig
from stepwise.errors import ConfigError
from stepwise.models.messages import ToolSpec
from stepwise.telemetry.observability import logger
from stepwise.tools.base import Tool
from stepwise.tools.builtin import builtin_tools
from stepwise.tools.idempotency import NO_EFFECTS, CallEffects
from stepwise.tools.python_tools import load_python_tools
from stepwise.tools.tool_budget import BudgetedTool, checked_spec, held_to_budget

if TYPE_CHECKING:
    # httpx and the HTTP tool are imported when a configuration has HTTP or OpenAPI tools, not before:
    # a ToolInvoke container with built-in or Python tools only never needs them (cold start)
    from stepwise.tools.http_clients import ClientFactory, ClientsByOrigin


class ToolRegistry:
    """Tools by unique name, in the order they were configured.

    ``redactor`` knows the secrets these tools use; the invoker scrubs observations with it. ``notes``
    say what the sources left out or renamed (OpenAPI operations that cannot be offered, name clashes).
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        redactor: Redactor | None = None,
        notes: Iterable[str] = (),
        approvals: Mapping[str, int] | None = None,
        effects: Mapping[str, CallEffects] | None = None,
        read_only: Iterable[str] = (),
        http_clients: ClientsByOrigin | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for each in tools:
            name = each.spec.name
            if name in self._tools:
                raise ConfigError(f"tool {name}: the name is used by more than one tool")
            self._tools[name] = each
        self.redactor = redactor if redactor is not None else Redactor()
        self.notes = list(notes)
        self._approvals = {name: seconds for name, seconds in (approvals or {}).items() if name in self._tools}
        self._effects = {name: each for name, each in (effects or {}).items() if name in self._tools}
        self._read_only = {name for name in read_only if name in self._tools}
        self._http_clients = http_clients

    def close(self) -> None:
        """Close the HTTP clients this registry's tools connect with (registries derived from it share them)."""
        if self._http_clients is not None:
            self._http_clients.close()

    def approval_timeout(self, name: str) -> int | None:
        """How long a call of the tool `name` waits for approval, or None when it runs without one."""
        return self._approvals.get(name)

    def effects(self, name: str) -> CallEffects:
        """What a call of the tool `name` may change outside, and whether a repeat of it is recognised."""
        return self._effects.get(name, NO_EFFECTS)

    def is_read_only(self, name: str) -> bool:
        """True when a call of the tool `name` changes nothing (a GET, a built-in, or one marked `replaySafe`,
        and not marked `sideEffects`): a replay with live tools may make it."""
        return name in self._read_only and not self.effects(name).side_effects

    def names(self) -> list[str]:
        """Every tool name, in configuration order."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def specs(self, names: list[str] | None = None, *, full: bool = False) -> list[ToolSpec]:
        """Specs to offer a model: all tools, or those ``names`` in that order; with ``full``, the full
        spec of a tool offered with a reduced one (what `find_tools` indexes).

        Raises `ConfigError` for a name no tool has (a profile that lists a tool nobody configured).
        """
        if names is not None:
            unknown = [name for name in names if name not in self._tools]
            if unknown:
                raise ConfigError(
                    f"unknown tool(s) {', '.join(unknown)}; configured tools: {', '.join(self._tools) or 'none'}"
                )
        chosen = list(self._tools.values()) if names is None else [self._tools[name] for name in names]
        return [checked_spec(each) if full else each.spec for each in chosen]

    def full_specs(self, names: list[str] | None = None) -> dict[str, ToolSpec]:
        """The full specs of the tools (all, or those ``names``) offered with a reduced schema, by name."""
        chosen = self._tools if names is None else {name: self._tools[name] for name in names if name in self._tools}
        return {
            name: each.full_spec for name, each in chosen.items() if isinstance(each, BudgetedTool) and each.reduced
        }

    def restricted_to(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of only the tools ``names`` allows (a profile's tools), in configuration order.

        Calls to any other tool then get the invoker's "unknown tool" observation. Raises `ConfigError`
        for a name no tool has. The redactor is shared, so secrets stay scrubbed.
        """
        allowed = set(names)
        unknown = sorted(allowed - set(self._tools))
        if unknown:
            raise ConfigError(
                f"unknown tool(s) {', '.join(unknown)}; configured tools: {', '.join(self._tools) or 'none'}"
            )
        return ToolRegistry(
            [each for name, each in self._tools.items() if name in allowed],
            redactor=self.redactor,
            approvals=self._approvals,
            effects=self._effects,
            read_only=self._read_only,
            http_clients=self._http_clients,
        )

    def with_tools(self, extra: Iterable[Tool]) -> ToolRegistry:
        """This registry with ``extra`` tools after its own (a profile's `find_tools`); same redactor."""
        return ToolRegistry(
            [*self._tools.values(), *extra],
            redactor=self.redactor,
            notes=self.notes,
            approvals=self._approvals,
            effects=self._effects,
            read_only=self._read_only,
            http_clients=self._http_clients,
        )

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def build_tool_registry(
    config: ToolsConfig,
    *,
    config_dir: Path,
    http_client_factory: ClientFactory | None = None,
    secret_resolver: SecretResolver | None = None,
    s3_client: Any = None,
) -> ToolRegistry:
    """Build every configured tool: HTTP APIs, OpenAPI documents, MCP servers, A2A agents, built-ins, Python modules.

    OpenAPI documents are read (from the config directory, S3 — with ``s3_client``, or a default one
    made on first use — or https), MCP servers are asked for their tools and A2A agents' cards are read here,
    once per container.
    Raises `ConfigError` for a document that cannot be imported, an MCP server that cannot be listed, an
    unknown built-in, a Python module that cannot be loaded, or a tool name used twice across sources.
    Secrets are not fetched here but at call time (and then cached). HTTP tools connect with one client
    per origin, made by ``http_client_factory`` (default: `default_http_client`) on first use and closed
    by the registry's `close`.
    """
    resolver = secret_resolver if secret_resolver is not None else SecretResolver()
    collected = _CollectedTools()
    clients: ClientsByOrigin | None = None
    if config.apis or config.openapi:
        from stepwise.tools.http_clients import ClientsByOrigin, default_http_client
        from stepwise.tools.http_tool import HttpTool

        clients = ClientsByOrigin(http_client_factory or default_http_client)
        for index, api in enumerate(config.apis):
            with _unusable_as(f"tools.apis.{index}"):
                tools = [
                    HttpTool(api, endpoint, http_clients=clients, secret_resolver=resolver) for endpoint in api.tools
                ]
            for tool, endpoint in zip(tools, api.tools, strict=True):
                collected.add(
                    tool,
                    f"api {api.url}",
                    approval=api.tool_approval_timeout(endpoint),
                    read_only=endpoint.method in SAFE_METHODS,
                    effects=tool.effects,
                )
        if config.openapi:
            # only a configuration with OpenAPI sources loads the importer
            from stepwise.tools.openapi import DocumentLoader, import_openapi_tools

            loader = DocumentLoader(config_dir=config_dir, s3_client=s3_client)
            for index, source in enumerate(config.openapi):
                with _unusable_as(f"tools.openapi.{index}"):
                    imported, notes = import_openapi_tools(
                        source, loader=loader, http_clients=clients, secret_resolver=resolver
                    )
                for tool in imported:
                    collected.add(
                        tool,
                        f"openapi {source.describe()}",
                        approval=source.approval_timeout(),
                        read_only=tool.method in SAFE_METHODS,
                        effects=tool.effects,
                    )
                collected.notes += [f"openapi {source.describe()}: {note}" for note in notes]
    if config.mcp:
        # only a configuration with MCP servers loads the MCP client
        from stepwise.tools.mcp import load_mcp_tools
    for index, server in enumerate(config.mcp):
        with _unusable_as(f"tools.mcp.{index}"):
            remote_tools = load_mcp_tools(server, secret_resolver=resolver)
        for remote in remote_tools:
            collected.add(
                remote,
                f"mcp {server.describe()}",
                approval=server.approval_timeout(),
                effects=CallEffects.of(server),
                renamable=True,
            )
    if config.a2a:
        # only a configuration with A2A agents loads the A2A client
        from stepwise.tools.a2a import load_a2a_tools
    for index, agent in enumerate(config.a2a):
        with _unusable_as(f"tools.a2a.{index}"):
            agent_tools, agent_notes = load_a2a_tools(agent, secret_resolver=resolver)
        for agent_tool in agent_tools:
            collected.add(
                agent_tool,
                f"a2a {agent.describe()}",
                approval=agent.approval_timeout(),
                effects=CallEffects.of(agent),
            )
        collected.notes += agent_notes
    available = builtin_tools()
    for name in config.builtin:
        if name not in available:
            raise ConfigError(f"builtin: unknown tool {name!r}; built-in tools: {', '.join(available)}")
        # the built-ins read a clock or compute: nothing outside changes
        collected.add(available[name], "builtin", read_only=True)
    modules = {entry.module: entry for entry in config.python_modules()}
    for each in load_python_tools(list(modules), config_dir=config_dir):
        module = each.function.__module__
        rule = modules.get(module)
        collected.add(
            each,
            f"python module {module}",
            approval=rule.approval_timeout() if rule else None,
            effects=CallEffects.of(rule) if rule else NO_EFFECTS,
        )
    # Specs over the size limit are trimmed or left out after every source is in, so a name clash is
    # still found between tools a trim would leave out.
    fitted, budget_notes = held_to_budget(collected.tools, config.max_schema_bytes)
    if budget_notes:
        logger.info("tool schemas trimmed or left out", extra={"changed": len(budget_notes)})
    return ToolRegistry(
        fitted,
        redactor=resolver.redactor,
        notes=collected.notes + budget_notes,
        approvals=collected.approvals,
        effects=collected.effects,
        read_only=collected.read_only | set(config.replay_safe),
        http_clients=clients,
    )


@contextmanager
def _unusable_as(field: str) -> Iterator[None]:
    """Turn anything but a `ConfigError` raised while building one source's tools into one naming `field`.

    Validation catches what it knows of; a value a library still refuses (a URL httpx cannot parse, a
    schema a validator chokes on) must be one line naming the field too, never a traceback.
    """
    try:
        yield
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"{field}: cannot be used: {type(exc).__name__}: {redact_known_secrets(str(exc))}") from None


class _CollectedTools:
    """Tools in configuration order, each name owned by exactly one source."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []
        self.notes: list[str] = []
        self.approvals: dict[str, int] = {}
        self.read_only: set[str] = set()
        self.effects: dict[str, CallEffects] = {}
        self._owners: dict[str, str] = {}
        self._renamable: set[str] = set()

    def add(
        self,
        tool: Tool,
        source: str,
        *,
        approval: int | None = None,
        read_only: bool = False,
        effects: CallEffects = NO_EFFECTS,
        renamable: bool = False,
    ) -> None:
        """Add `source`'s tool; `renamable` for a source whose tools a `prefix` or `rename` can rename (MCP),
        which a clash's error then suggests."""
        name = tool.spec.name
        if renamable:
            self._renamable.add(source)
        if name in self._owners:
            owner = self._owners[name]
            fix = ""
            if self._renamable & {source, owner}:
                fix = "; give one of the MCP servers a prefix: (for all its tools) or a rename: of this one"
            raise ConfigError(f"{source}: tool {name} is already defined by {owner}{fix}")
        self._owners[name] = source
        self.tools.append(tool)
        if approval is not None:
            self.approvals[name] = approval
        if effects != NO_EFFECTS:
            self.effects[name] = effects
        if read_only:
            self.read_only.add(name)
