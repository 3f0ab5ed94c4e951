"""What the LLMCall and Parse steps both need to know about a run's agent: its profile, protocol and tools."""

from __future__ import annotations

from dataclasses import dataclass

from stepwise.models.config import AgentProfile
from stepwise.models.messages import ToolSpec
from stepwise.models.run import RunMeta
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


def agent_for(meta: RunMeta, runtime: StepRuntime) -> RunAgent:
    """Resolve the run's profile into a protocol and a tool list: the profile's tools, then the client's."""
    profile = runtime.profile(meta.profile)
    capabilities = runtime.config.models[profile.model].capabilities
    protocol_name = resolve_protocol(profile.strategy, profile.protocol, capabilities.native_tools)
    client_tools = meta.options.client_tools if meta.options is not None else []
    return RunAgent(
        profile=profile,
        protocol=get_protocol(protocol_name),
        tools=runtime.tools().specs(profile.tools) + client_tools,
        client_tools=frozenset(tool.name for tool in client_tools),
    )
