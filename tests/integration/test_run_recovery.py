"""The payload a restarted local engine resumes an open run with, rebuilt from the stored items."""

from __future__ import annotations

from typing import Any

from stepwise.local.environment import LocalEnvironment
from stepwise.local.run_recovery import resume_input
from tests.integration.conftest import RUN_ID, start_demo_run


def run_two_iterations(environment: LocalEnvironment) -> dict[str, Any]:
    """The demo run driven through the handlers for two iterations; the payload LLMCall returned last."""
    payload = start_demo_run(environment)
    for _ in range(2):
        called = environment.invoke("LLMCallFunction", environment.invoke("IterationGuardFunction", payload))
        payload = environment.invoke("ParseFunction", called)
        for index, call in enumerate(payload["calls"]):
            event = {"run_id": RUN_ID, "iteration": payload["iteration"], "index": index, "call": call}
            environment.invoke("ToolInvokeFunction", event)
    return called


def test_a_resumed_run_carries_the_spend_of_the_iterations_before_the_one_it_resumes(
    demo_environment: LocalEnvironment,
) -> None:
    # Given a run whose two iterations' model calls are stored, left open at iteration 3
    last_call = run_two_iterations(demo_environment)
    meta = demo_environment.runtime.store.begin_iteration(RUN_ID, 3)
    # When the payload to resume it is rebuilt from the store
    resumed = resume_input(meta, demo_environment.runtime)
    # Then it re-enters iteration 3 with the tokens the loop had carried after iteration 2
    assert resumed["iteration"] == 2
    assert resumed["run"]["spend"] == last_call["run"]["spend"]
    assert resumed["run"]["spend"]["input_tokens"] > 0
