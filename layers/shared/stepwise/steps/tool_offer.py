"""Which tools a model call offers when a profile has too many to list: `find_tools` and what it found.

A run offers every tool of its profile, plus the client's, while they number at most the profile's
``tool_search.threshold`` (and never more than `MAX_TOOLS_PER_REQUEST`, OpenAI's cap). Past that, the
profile's tools are replaced by `find_tools`, the tool ``tool_choice`` names (if any), and the tools
earlier `find_tools` calls of the run found, most recent last, as many as fit.

A tool whose schema is too large is offered reduced (`stepwise.tools.tool_budget`); a profile with one
has `find_tools` even within the threshold, and a tool `find_tools` was asked the full schema of is
offered with it from then on.

What a run has found is not kept anywhere of its own: it is read back from the run's stored `find_tools`
observations, the lines the model was shown (``- <tool name>: <purpose>``, ``The full schema of <tool
name> is offered...``). The conversation is already read by LLMCall, so the payload stays as it is, a
retried LLMCall offers the same tools, and a tool cut from a truncated observation (one the model never
saw) is not offered either.

A call to a tool of the profile that was not offered still runs: the model named a real tool, and its
arguments are checked against that tool's schema as for any call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from stepwise.errors import ConfigError
from stepwise.models.messages import FIND_TOOLS, ToolSpec
from stepwise.models.run import RunOptions, StoredMessage

if TYPE_CHECKING:
    from stepwise.config.model import ToolSearch
    from stepwise.steps.runtime import StepRuntime
    from stepwise.tools.find_tools import FindTools

# "- <name>: <purpose>" for a tool found, "The full schema of <name> is offered" for one asked in full
_FOUND_LINE = re.compile(
    r"^(?:- ([A-Za-z0-9_-]{1,64}):|The full schema of ([A-Za-z0-9_-]{1,64}) is offered)", re.MULTILINE
)


def needs_search(profile_tools: Sequence[ToolSpec], client_tools: int, search: ToolSearch) -> bool:
    """True when the profile's tools do not all fit one request: the model then gets `find_tools`.

    Raises `ConfigError` when a tool of the profile is itself called `find_tools`.
    """
    if not search.needed(len(profile_tools), client_tools):
        return False
    _check_name_free(profile_tools)
    return True


def _check_name_free(profile_tools: Sequence[ToolSpec]) -> None:
    if any(spec.name == FIND_TOOLS for spec in profile_tools):
        raise ConfigError(f"a tool is named {FIND_TOOLS}, the name of the tool search its profile needs; rename it")


def finder_for(profile: str, options: RunOptions | None, runtime: StepRuntime) -> FindTools | None:
    """The run's `find_tools` when its profile's tools do not all fit one request, or one of them is
    offered with a reduced schema; else None.

    Here rather than in `stepwise.steps.agent` so that ToolInvoke, which needs the finder and no
    protocol, does not import the protocols (cold start).
    """
    client_tools = options.client_tools if options is not None else []
    names = runtime.profile(profile).tools
    profile_tools = runtime.tools().specs(names)
    searching = needs_search(profile_tools, len(client_tools), runtime.profile(profile).tool_search)
    if not searching:
        if not runtime.tools().full_specs(names):
            return None
        _check_name_free(profile_tools)
    return runtime.tool_finder(profile, searching=searching)


def found_in(history: Sequence[StoredMessage], known: set[str]) -> list[str]:
    """The tools the run's `find_tools` observations listed, each once, in the order last found."""
    found: dict[str, None] = {}
    for name, _ in _named_in_observations(history):
        if name in known:
            found.pop(name, None)
            found[name] = None
    return list(found)


def _named_in_observations(history: Sequence[StoredMessage]) -> list[tuple[str, bool]]:
    """The tools the run's `find_tools` observations named, in order, each with whether it was offered in full."""
    named: list[tuple[str, bool]] = []
    for message in history:
        if message.role == "tool" and message.name == FIND_TOOLS:
            named += [(listed or asked, not listed) for listed, asked in _FOUND_LINE.findall(message.content)]
    return named


def with_full_schemas(
    specs: Sequence[ToolSpec], history: Sequence[StoredMessage], full_specs: Mapping[str, ToolSpec]
) -> list[ToolSpec]:
    """``specs`` with the full spec of each reduced tool the run's `find_tools` observations offered in full."""
    if not full_specs:
        return list(specs)
    asked = {name for name, in_full in _named_in_observations(history) if in_full}
    return [full_specs[spec.name] if spec.name in asked else spec for spec in specs]


def offered(
    profile_tools: Sequence[ToolSpec],
    finder: ToolSpec,
    client_tools: Sequence[ToolSpec],
    history: Sequence[StoredMessage],
    *,
    search: ToolSearch,
    tool_choice: str | None,
) -> list[ToolSpec]:
    """The tools of one model call of a run that searches: `find_tools`, the pinned and the found ones,
    then the client's; never more than `ToolSearch.room` leaves."""
    room = search.room(len(client_tools))
    by_name = {spec.name: spec for spec in profile_tools}
    pinned = [tool_choice] if tool_choice in by_name else []
    chosen: list[ToolSpec] = [finder] if room else []
    chosen += [by_name[name] for name in pinned][: max(0, room - len(chosen))]
    found = [name for name in found_in(history, set(by_name)) if name not in pinned]
    left = room - len(chosen)
    if left > 0:
        chosen += [by_name[name] for name in found[-left:]]
    return chosen + list(client_tools)
