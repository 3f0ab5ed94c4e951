"""`stepwise invoke --seed-run`: build in a fresh store the state an event's step expects to find.

A step of the loop reads what the steps before it stored: Parse the iteration's model message, ToolInvoke
the decision naming its call, Format the final decision. Seeding creates the run the event names and then
plays the real steps (with the configured model and tools; the demo's scripted model by default) up to,
not including, the event's own step, so the stored state is what a real run would have left there.
"""

from __future__ import annotations

from typing import Any

from stepwise.local.defaults import DEMO_QUESTION
from stepwise.models.messages import ChatMessage
from stepwise.steps.runs import create_run

# The steps of one iteration in the order statemachine/agent.asl.json runs them.
_ITERATION_STEPS = ("IterationGuardFunction", "LLMCallFunction", "ParseFunction", "ToolInvokeFunction")


def _run_id(event: dict[str, Any]) -> str | None:
    """The run a state event, an API request or an execution's status change (named by its run) is about."""
    run_id = (
        event.get("run_id")
        or (event.get("pathParameters") or {}).get("run_id")
        or (event.get("detail") or {}).get("name")
    )
    return run_id if isinstance(run_id, str) else None


def _steps_before(logical_id: str, event: dict[str, Any]) -> tuple[int, int]:
    """(iteration, how many of its steps) to play before `logical_id` runs on `event`.

    A failure event (`error` set by a Catch) and the guard's own event need only the run.
    """
    iteration = event.get("iteration")
    steps = (*_ITERATION_STEPS, "CompactFunction", "FormatFunction")
    if not isinstance(iteration, int) or "error" in event or logical_id not in steps:
        return 0, 0
    if logical_id == "IterationGuardFunction":
        return 0, 0
    if logical_id == "CompactFunction":
        # Compact runs between the guard and the model call, as LLMCall's retry does
        return iteration, _ITERATION_STEPS.index("LLMCallFunction")
    if logical_id == "FormatFunction":
        return iteration, len(_ITERATION_STEPS)
    return iteration, _ITERATION_STEPS.index(logical_id)


def _play_iteration(environment: Any, payload: dict[str, Any], steps: int) -> dict[str, Any]:
    """Play the first `steps` steps of the next iteration; the payload the last of them returned."""
    payload = environment.invoke("IterationGuardFunction", payload)
    if steps > 1:
        environment.invoke("LLMCallFunction", payload)
    if steps > 2:
        payload = environment.invoke("ParseFunction", payload)
    if steps > 3:
        for index, call in enumerate(payload.get("calls") or []):
            item = {"run_id": payload["run_id"], "iteration": payload["iteration"], "index": index, "call": call}
            environment.invoke("ToolInvokeFunction", item)
    return payload


def seed_for_event(logical_id: str, event: Any, environment: Any) -> None:
    """Create the run `event` names, owned as its caller, and play the steps before `logical_id`'s."""
    if not isinstance(event, dict):
        return
    run_id = _run_id(event)
    if run_id is None:
        return
    identity = (event.get("requestContext") or {}).get("identity") or {}
    create_run(
        environment.runtime,
        messages=[ChatMessage(role="user", content=DEMO_QUESTION)],
        owner=identity.get("apiKeyId") or "local",
        profile=environment.runtime.config.default_profile,
        run_id=run_id,
    )
    iteration, steps = _steps_before(logical_id, event)
    payload: dict[str, Any] = {"run_id": run_id, "iteration": 0, "final_round": False, "next": "start", "calls": []}
    for current in range(1, iteration + 1):
        payload = _play_iteration(environment, payload, steps if current == iteration else len(_ITERATION_STEPS))
