"""What the LLMCall and Parse steps both need to know about a run's agent: its profile, protocol and tools."""

from __future__ import annotations

import typing
from dataclasses import dataclass

from stepwise.config.model import AgentProfile
from stepwise.models.messages import ToolSpec
from stepwise.models.run import RunOptions
from stepwise.protocols import Protocol, get_protocol, resolve_protocol
from stepwise.steps.runtime import StepRuntime


@dataclass(frozen=True)
class RunAgent:
    """The profile of a run with its protocol and the specs of the tools it may use.

    `client_tools` names the tools the client sent: a call to one is handed back to the client, not run.
    """

    profile: AgentProfile
    protocol: Protocol
    tools: list[ToolSpec]
    client_tools: frozenset[str] = frozenset()


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
    return RunAgent(
        profile=profile,
        protocol=get_protocol(protocol_name),
        tools=runtime.tools().specs(profile.tools) + client_tools,
        client_tools=frozenset(tool.name for tool in client_tools),
    )
