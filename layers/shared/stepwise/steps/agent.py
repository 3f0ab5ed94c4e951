"""What the LLMCall and Parse steps both need to know about a run's agent: its profile, protocol and tools."""

from __future__ import annotations

import typing
from dataclasses import dataclass

from stepwise.models.config import AgentProfile
from stepwise.models.messages import ToolSpec
from stepwise.protocols import Protocol, get_protocol, resolve_protocol
from stepwise.steps.runtime import StepRuntime


@dataclass(frozen=True)
class RunAgent:
    """The profile of a run with its protocol and the specs of the tools it may use."""

    profile: AgentProfile
    protocol: Protocol
    tools: list[ToolSpec]


@dataclass(frozen=True)
class StoredRun:
    """The run a step writes for: its id and when its items expire (see `stepwise.store.RunRef`)."""

    run_id: str
    expires_at: int


class ProfiledRun(typing.Protocol):
    """A run's META or the context the payload carries: either names the run's profile."""

    @property
    def profile(self) -> str: ...


def agent_for(run: ProfiledRun, runtime: StepRuntime) -> RunAgent:
    """Resolve the run's profile into a protocol and a tool list."""
    profile = runtime.profile(run.profile)
    capabilities = runtime.config.models[profile.model].capabilities
    protocol_name = resolve_protocol(profile.strategy, profile.protocol, capabilities.native_tools)
    return RunAgent(
        profile=profile,
        protocol=get_protocol(protocol_name),
        tools=runtime.tools().specs(profile.tools),
    )
