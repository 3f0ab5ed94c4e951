"""What the LLMCall and Parse steps both need to know about a run's agent: its profile, protocol and tools."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stepwise.models.messages import ToolSpec
from stepwise.models.run import RunOptions, StoredMessage
from stepwise.protocols import Protocol, get_protocol, resolve_protocol
from stepwise.steps.delegation import agent_specs
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_offer import finder_for, offered, with_full_schemas

if typing.TYPE_CHECKING:
    from stepwise.config.model import AgentProfile
    from stepwise.tools.find_tools import FindTools


@dataclass(frozen=True)
class RunAgent:
    """The profile of a run with its protocol and the specs of the tools it may use.

    `tools` are every tool a call may name (Parse reads calls against them); `client_tools` names the
    tools the client sent: a call to one is handed back to the client, not run. `finder` is the profile's
    `find_tools` when its tools are too many to offer at once or some are offered with a reduced schema
    (see `stepwise.steps.tool_offer`).
    """

    profile: AgentProfile
    protocol: Protocol
    tools: list[ToolSpec]
    client_tools: frozenset[str] = frozenset()
    finder: FindTools | None = None
    profile_tools: list[ToolSpec] = field(default_factory=list)
    client_specs: list[ToolSpec] = field(default_factory=list)

    def offered_tools(self, history: Sequence[StoredMessage], tool_choice: str | None) -> list[ToolSpec]:
        """The tools one model call offers: all of them, or `find_tools` and what the run found; a reduced
        tool with its full schema once `find_tools` was asked for it."""
        if self.finder is None:
            return self.tools
        if not self.finder.searching:
            return with_full_schemas(self.tools, history, self.full_specs)
        chosen = offered(
            self.profile_tools,
            self.finder.spec,
            self.client_specs,
            history,
            search=self.profile.tool_search,
            tool_choice=tool_choice,
        )
        return with_full_schemas(chosen, history, self.full_specs)

    @property
    def full_specs(self) -> Mapping[str, ToolSpec]:
        """The full specs of the profile's tools offered with a reduced schema, by name."""
        return self.finder.full_specs if self.finder is not None else {}


@dataclass(frozen=True)
class StoredRun:
    """The run a step writes for: its id and when its items expire (see `stepwise.store.RunRef`)."""

    run_id: str
    expires_at: int


class ProfiledRun(typing.Protocol):
    """What names a run's agent: its profile, and the options its request set (META holds both)."""

    @property
    def profile(self) -> str: ...

    @property
    def options(self) -> RunOptions | None: ...


@dataclass(frozen=True)
class AgentRun:
    """A run's profile and options when they do not come from its META item (see `ProfiledRun`)."""

    profile: str
    options: RunOptions | None = None


def agent_for(run: ProfiledRun, runtime: StepRuntime) -> RunAgent:
    """Resolve the run's profile into a protocol and a tool list: the profile's tools, then the client's."""
    profile = runtime.profile(run.profile)
    capabilities = runtime.config.models[profile.model].capabilities
    protocol_name = resolve_protocol(profile.strategy, profile.protocol, capabilities.native_tools)
    client_tools = run.options.client_tools if run.options is not None else []
    # the profiles it may delegate to are tools too, named after them (`stepwise.steps.delegation`)
    profile_tools = runtime.tools().specs(profile.tools) + agent_specs(profile.agent_refs, runtime)
    finder = finder_for(run.profile, run.options, runtime)
    return RunAgent(
        profile=profile,
        protocol=get_protocol(protocol_name),
        tools=profile_tools + ([finder.spec] if finder is not None else []) + client_tools,
        client_tools=frozenset(tool.name for tool in client_tools),
        finder=finder,
        profile_tools=profile_tools,
        client_specs=client_tools,
    )
