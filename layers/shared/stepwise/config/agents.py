"""Agents as tools: the profiles a profile may delegate to (`agents:`), and the checks of that graph.

A profile lists other profiles by name, or as `{profile, description, max_iterations}`. The model sees each
as a tool named after the profile, taking `{question: string}`; a call starts a child run of that profile
(`stepwise.steps.child_runs`). The graph may not have a cycle (a profile reaching itself through its agents),
and how deep a tree of runs may grow is the configuration's `max_agent_depth`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

# How deep a tree of runs may grow by default: a parent, its child and its grandchild.
DEFAULT_MAX_AGENT_DEPTH = 3
MAX_AGENT_DEPTH = 10


class AgentRef(BaseModel):
    """One profile a profile may delegate to, with what the delegating model is told of it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    profile: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # what the model reads of the tool; the profile's own `description` when absent
    description: str | None = Field(default=None, min_length=1, max_length=1000)
    # caps the child's iterations below its profile's own
    max_iterations: int | None = Field(default=None, ge=1, le=200)


def agent_refs(entries: Sequence[str | AgentRef] | None) -> list[AgentRef]:
    """A profile's `agents:` with every short form (a bare profile name) written out."""
    return [AgentRef(profile=entry) if isinstance(entry, str) else entry for entry in entries or []]


def agent_tool_description(ref: AgentRef, profile_description: str | None) -> str:
    """What the delegating model reads of the agent `ref` names: the description given, the profile's, else
    a sentence that says what the tool does."""
    return (
        ref.description
        or profile_description
        or f"Ask the `{ref.profile}` agent a question; it works on it with its own tools and returns its answer."
    )


def agent_graph_problem(graph: Mapping[str, Sequence[AgentRef]], known: Sequence[str]) -> str | None:
    """The first problem of the delegation graph (`profile -> its agents`), named by the field, or None.

    An agent that is not a profile is refused, and so is a cycle: its path is named, e.g. `a -> b -> a`.
    """
    for name, refs in graph.items():
        seen: set[str] = set()
        for index, ref in enumerate(refs):
            if ref.profile not in known:
                return f"profiles.{name}.agents.{index}.profile: '{ref.profile}' is not one of the profiles"
            if ref.profile in seen:
                return f"profiles.{name}.agents.{index}.profile: '{ref.profile}' is listed twice"
            seen.add(ref.profile)
    for start in graph:
        cycle = _cycle_from(start, graph)
        if cycle is not None:
            return f"profiles.{start}.agents: a profile cannot reach itself through its agents: {' -> '.join(cycle)}"
    return None


def _cycle_from(start: str, graph: Mapping[str, Sequence[AgentRef]]) -> list[str] | None:
    """A path from `start` back to itself through the graph, if there is one (depth-first, iterative)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    visited: set[str] = set()
    while stack:
        node, path = stack.pop()
        for ref in graph.get(node, ()):
            if ref.profile == start:
                return [*path, start]
            if ref.profile not in visited:
                visited.add(ref.profile)
                stack.append((ref.profile, [*path, ref.profile]))
    return None
