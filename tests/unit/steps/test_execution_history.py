"""The worst-case execution history of a run, from the state machine's definition, checked at config load."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.history_cap import AGENT_LOOP, HISTORY_EVENT_LIMIT, LoopShape
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError
from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.support.cfn_render import rendered_definition


def definition() -> dict[str, Any]:
    return rendered_definition(SamTemplate.load(PROJECT_ROOT / "template.yaml"))


def load_limits(**limits: Any) -> StepwiseConfig:
    return StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}},
            "profiles": {"research": {"model": "m", "limits": limits}},
            "default_profile": "research",
        },
        source="test.yaml",
        environ={},
    )


def test_the_layer_knows_the_loop_the_definition_runs() -> None:
    # Given the state machine's definition; When its loop is read; Then it is the shape the layer checks with
    assert LoopShape.from_definition(definition()) == AGENT_LOOP


def test_each_parallel_call_adds_one_map_item_of_events_to_an_iteration() -> None:
    # Given the loop; When one more tool call may run per iteration
    one, two = AGENT_LOOP.events_per_iteration(1), AGENT_LOOP.events_per_iteration(2)
    # Then an iteration may write one Map item more: its two events, its Choice's two, the wait for approval's
    # submission, and its two retried Tasks' (5 + 7 x 3 each)
    assert two - one == 2 + 2 + 1 + 2 * (5 + 7 * 3)


def test_the_most_iterations_allowed_fit_the_history_and_one_more_would_not() -> None:
    # Given the most iterations allowed with 4 parallel calls
    most = AGENT_LOOP.most_iterations(4)
    # Then their worst case fits in the history, and one more iteration's would not
    assert AGENT_LOOP.events_per_run(most, 4) <= HISTORY_EVENT_LIMIT < AGENT_LOOP.events_per_run(most + 1, 4)


def test_limits_that_could_reach_the_history_cap_are_refused_naming_the_profile_and_fields() -> None:
    # Given a profile of 100 iterations of 16 parallel calls; When loaded; Then the error says where and why
    with pytest.raises(
        ConfigError, match=r"profiles\.research\.limits: .*max_iterations=100 with max_parallel_calls=16"
    ):
        load_limits(max_iterations=100, max_parallel_calls=16)


def test_limits_within_the_history_cap_load() -> None:
    # Given the most iterations 16 parallel calls allow; When loaded; Then the profile keeps them
    most = AGENT_LOOP.most_iterations(16)
    limits = load_limits(max_iterations=most, max_parallel_calls=16).profile("research").limits
    assert (limits.max_iterations, limits.max_parallel_calls) == (most, 16)


def test_a_request_too_long_for_the_model_costs_one_detour_through_compact_per_iteration() -> None:
    # Given the definition, and the same without LLMCall's catch of a context overflow into Compact
    with_detour = definition()
    without = definition()
    without["States"]["LLMCall"]["Catch"] = [
        catcher for catcher in without["States"]["LLMCall"]["Catch"] if catcher["Next"] != "Compact"
    ]
    # When each loop is read; Then the detour adds Compact and a second LLMCall to an iteration, once
    tasks = LoopShape.from_definition(with_detour).task_retries
    assert len(tasks) - len(LoopShape.from_definition(without).task_retries) == 2
    # And a run of 100 one-call iterations, as a long research task makes, is still allowed
    assert AGENT_LOOP.most_iterations(1) >= 100
