"""A malformed state event is refused by its handler with an error naming the field and the reason."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.errors import InvalidStateEvent
from stepwise.local.environment import LocalEnvironment
from tests.integration.conftest import RUN_ID

VALID = {"run_id": RUN_ID, "iteration": 1, "final_round": False, "next": "continue", "calls": []}


@pytest.mark.parametrize(
    ("function", "event", "named"),
    [
        ("IterationGuardFunction", {k: v for k, v in VALID.items() if k != "run_id"}, "run_id: Field required"),
        ("LLMCallFunction", VALID | {"iteration": "1"}, "iteration: Input should be a valid integer"),
        ("ParseFunction", VALID | {"next": "jump"}, "next: Input should be"),
        ("FormatFunction", VALID | {"history": ["a whole conversation"]}, "history: Extra inputs are not permitted"),
        ("ToolInvokeFunction", {"run_id": RUN_ID, "iteration": 1, "index": 0, "call": {"name": "x"}}, "call.call_id"),
        ("IterationGuardFunction", VALID | {"run_id": "../other"}, "run_id: String should match pattern"),
    ],
)
def test_a_malformed_state_event_is_refused_naming_the_field(
    demo_environment: LocalEnvironment, function: str, event: dict[str, Any], named: str
) -> None:
    # Given an event that breaks the state payload contract
    # When the function is invoked with it
    with pytest.raises(InvalidStateEvent) as refused:
        demo_environment.invoke(function, event)
    # Then the error names the field and why, and nothing was stored for the run
    assert named in str(refused.value)
    assert demo_environment.runtime.store.get_run(RUN_ID) is None
