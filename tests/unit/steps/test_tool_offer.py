"""What a model call offers when a profile has more tools than its threshold: `find_tools` and what it found."""

from __future__ import annotations

import pytest

from stepwise.config.model import AgentProfile, ToolSearch
from stepwise.errors import ConfigError
from stepwise.models.messages import ToolCall, ToolSpec
from stepwise.models.run import StoredMessage
from stepwise.steps.tool_offer import found_in, needs_search, offered, with_full_schemas
from stepwise.tools.find_tools import find_tools_spec, full_schema_line

TOOLS = [ToolSpec(name=f"tool_{index}", description=f"Tool number {index}.") for index in range(40)]
FINDER = find_tools_spec(len(TOOLS), 5)
SEARCH = ToolSearch(threshold=8, results=3)


def searched(iteration: int, *found: str) -> list[StoredMessage]:
    """The messages of one iteration where the model called find_tools and was shown `found`."""
    call = ToolCall(id=f"call_{iteration}", name="find_tools", arguments={"query": "anything"})
    lines = "\n".join(f"- {name}: what it does." for name in found)
    return [
        StoredMessage(role="assistant", tool_calls=[call], iteration=iteration, slot=1),
        StoredMessage(
            role="tool",
            name="find_tools",
            tool_call_id=call.id,
            content=f"Found {len(found)} tools; you can call them from now on:\n{lines}",
            iteration=iteration,
            slot=2,
        ),
    ]


def names(specs: list[ToolSpec]) -> list[str]:
    return [spec.name for spec in specs]


def test_tools_within_the_threshold_are_all_offered_and_no_search() -> None:
    # Given 8 tools and a threshold of 8
    # Then no search is needed; one more tool, or one client tool, and it is
    assert not needs_search(TOOLS[:8], 0, SEARCH)
    assert needs_search(TOOLS[:9], 0, SEARCH)
    assert needs_search(TOOLS[:8], 1, SEARCH)


def test_the_first_call_offers_find_tools_and_the_clients_tools_only() -> None:
    # Given a run with no search yet and one tool sent by the client
    client = [ToolSpec(name="client_tool")]
    # When the tools of its first model call are chosen
    chosen = offered(TOOLS, FINDER, client, [], search=SEARCH, tool_choice=None)
    # Then they are find_tools and the client's tool
    assert names(chosen) == ["find_tools", "client_tool"]


def test_tools_found_in_earlier_iterations_are_offered_most_recent_last() -> None:
    # Given a run that searched twice, the second search finding one tool again
    history = searched(1, "tool_3", "tool_7") + searched(2, "tool_12", "tool_3")
    # When the tools of its next call are chosen
    chosen = offered(TOOLS, FINDER, [], history, search=SEARCH, tool_choice=None)
    # Then find_tools comes first, then each found tool once, in the order last found
    assert names(chosen) == ["find_tools", "tool_7", "tool_12", "tool_3"]


def test_past_the_threshold_the_tools_found_longest_ago_are_no_longer_offered() -> None:
    # Given a run whose searches found 9 tools, with a threshold of 8
    history = searched(1, "tool_1", "tool_2", "tool_3") + searched(2, "tool_4", "tool_5", "tool_6")
    history += searched(3, "tool_7", "tool_8", "tool_9")
    # When the tools of its next call are chosen
    chosen = offered(TOOLS, FINDER, [], history, search=SEARCH, tool_choice=None)
    # Then 8 are offered: find_tools and the 7 found last
    assert names(chosen) == ["find_tools", *(f"tool_{index}" for index in range(3, 10))]


def test_only_names_of_the_profiles_tools_in_find_tools_observations_count() -> None:
    # Given an observation of find_tools naming an unknown tool, and another tool's observation in the same shape
    history = searched(1, "tool_1", "no_such_tool")
    history.append(StoredMessage(role="tool", name="tool_1", content="- tool_2: looks found", iteration=1, slot=3))
    # When the found tools are read back
    # Then only the profile's tool listed by find_tools counts
    assert found_in(history, {spec.name for spec in TOOLS}) == ["tool_1"]


def test_the_tool_named_by_tool_choice_is_always_offered() -> None:
    # Given a profile whose tool_choice names one of its tools
    # When the tools of a call are chosen
    chosen = offered(TOOLS, FINDER, [], searched(1, "tool_5"), search=SEARCH, tool_choice="tool_30")
    # Then that tool is offered beside find_tools and what was found
    assert names(chosen) == ["find_tools", "tool_30", "tool_5"]


def test_no_request_carries_more_than_128_tools() -> None:
    # Given a threshold of 128 and a client that sent 125 tools
    client = [ToolSpec(name=f"client_{index}") for index in range(125)]
    search = ToolSearch(threshold=128, results=5)
    history = searched(1, "tool_1", "tool_2", "tool_3", "tool_4")
    # When the tools of a call are chosen
    chosen = offered(TOOLS, FINDER, client, history, search=search, tool_choice=None)
    # Then they are 128: find_tools, the two found last, and the client's
    assert len(chosen) == 128
    assert names(chosen)[:3] == ["find_tools", "tool_3", "tool_4"]


def test_a_threshold_above_openais_cap_is_refused() -> None:
    # Given a profile with a tool-search threshold of 129
    # When it is validated
    # Then the error names the field and the bound
    with pytest.raises(ValueError, match=r"tool_search\.threshold\n  Input should be less than or equal to 128"):
        AgentProfile.model_validate({"model": "m", "tool_search": {"threshold": 129}})


def test_a_profile_tool_called_find_tools_is_refused_when_the_search_is_needed() -> None:
    # Given more tools than the threshold, one of them called find_tools
    tools = [*TOOLS, ToolSpec(name="find_tools")]
    # When the search is asked for
    # Then it is refused, saying why
    with pytest.raises(ConfigError, match="a tool is named find_tools"):
        needs_search(tools, 0, SEARCH)


def asked_in_full(iteration: int, name: str) -> list[StoredMessage]:
    """The messages of one iteration where the model asked find_tools for the full schema of `name`."""
    call = ToolCall(id=f"call_{iteration}", name="find_tools", arguments={"tool": name})
    return [
        StoredMessage(role="assistant", tool_calls=[call], iteration=iteration, slot=1),
        StoredMessage(
            role="tool",
            name="find_tools",
            tool_call_id=call.id,
            content=full_schema_line(name),
            iteration=iteration,
            slot=2,
        ),
    ]


def test_a_reduced_tool_asked_in_full_is_offered_with_its_full_schema_from_then_on() -> None:
    # Given two tools offered reduced, one listed by a search and the other asked for in full
    full = {
        name: ToolSpec(name=name, description="Full.", parameters={"type": "object"}) for name in ("tool_3", "tool_4")
    }
    history = searched(1, "tool_3") + asked_in_full(2, "tool_4")
    # When the tools of the next call are chosen, searching and not
    chosen = with_full_schemas(offered(TOOLS, FINDER, [], history, search=SEARCH, tool_choice=None), history, full)
    all_of_them = with_full_schemas(TOOLS[:8], history, full)
    # Then the one asked for is offered (as found) with its full spec, the one only listed as it was
    assert names(chosen) == ["find_tools", "tool_3", "tool_4"]
    assert [spec.description for spec in chosen[1:]] == ["Tool number 3.", "Full."]
    assert [spec.description for spec in all_of_them[3:5]] == ["Tool number 3.", "Full."]
