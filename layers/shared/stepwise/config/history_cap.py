"""How many execution-history events a run can write, against Step Functions' cap of 25,000 per execution.

A Standard execution that reaches the cap fails, and no Catch can record why. The count is a worst case:
every iteration calls `max_parallel_calls` tools and every Task uses all its retries. `LoopShape` is read
from the definition (`LoopShape.from_definition`); the layer carries `AGENT_LOOP`, the shape of
`statemachine/agent.asl.json` (a test checks that they agree), because a Lambda has no definition file to
read when it loads its configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HISTORY_EVENT_LIMIT = 25_000
"""Step Functions' quota of events in one execution's history (Standard workflows)."""

# Events a Lambda Task state writes: StateEntered, Scheduled, Started, Succeeded, StateExited; each
# retried attempt adds a failed attempt's Scheduled, Started and Failed (or TimedOut).
_TASK_EVENTS = 5
_RETRY_EVENTS = 3
_CHOICE_EVENTS = 2  # StateEntered, StateExited
_MAP_EVENTS = 4  # StateEntered, MapStateStarted, MapStateSucceeded, StateExited
_MAP_ITEM_EVENTS = 2  # MapIterationStarted, MapIterationSucceeded
_CALLBACK_EVENTS = 1  # a .waitForTaskToken Task's TaskSubmitted, besides a Task's own
# The callback Task's resource: written out, or the substitution that is one on Standard workflows
_CALLBACK_RESOURCES = (".waitForTaskToken", "${ApprovalWaitResource}")
_EXECUTION_EVENTS = 2  # ExecutionStarted, ExecutionSucceeded (or Failed)
_END_STATE_EVENTS = 2  # the Succeed or Fail state's StateEntered and StateExited


@dataclass(frozen=True)
class LoopShape:
    """What one iteration of the loop runs: its Task states, Choice states, and the Tasks of one Map item.

    Each Task is given as the number of retries it may make (the sum of its retriers' MaxAttempts).
    `map_item_extra_events` are a Map item's events besides its Tasks': its Choice states' and the
    callback (wait-for-approval, wait-for-a-child-run) Tasks' submission, along the item's costliest path.
    """

    task_retries: tuple[int, ...]
    choices: int
    map_item_task_retries: tuple[int, ...]
    end_task_retries: int
    map_item_extra_events: int = 0

    @classmethod
    def from_definition(cls, definition: dict[str, Any]) -> LoopShape:
        """The shape of a tool iteration at its costliest: from StartAt along each `Next`, taking a Choice's
        branch to the Map (the `tool_calls` route) or else its Default, to the Map, whose `Next` closes the
        loop; the end is the costliest Task reached from the loop.

        A Task with a Catch into a Task whose `Next` is this one again (LLMCall's `ContextWindowExceeded`
        into Compact) makes that detour once: Compact runs at most once per iteration
        (`stepwise.steps.context_state.can_compact`), and reached this way it costs more than reached from
        the Choice before LLMCall (NeedsCompaction), which it then replaces.
        """
        states: dict[str, Any] = definition["States"]
        start = definition["StartAt"]
        tasks: list[int] = []
        choices = 0
        map_items: tuple[int, ...] = ()
        map_extra = 0
        name = start
        seen: set[str] = set()
        while name not in seen:
            seen.add(name)
            state = states[name]
            if state["Type"] == "Task":
                tasks.append(_retries(state))
                for detour in _detours(name, state, states):
                    tasks += [_retries(states[detour]), _retries(state)]
                name = state["Next"]
            elif state["Type"] == "Choice":
                choices += 1
                branches = [choice["Next"] for choice in state["Choices"]]
                name = next((branch for branch in branches if states[branch]["Type"] == "Map"), state["Default"])
            elif state["Type"] == "Map":
                processor = state["ItemProcessor"]
                map_items, map_extra = _costliest_item(processor["States"], processor["StartAt"])
                name = state["Next"]
            else:
                raise ValueError(f"state {name} ({state['Type']}) is not part of the loop this module counts")
        if name != start:
            raise ValueError(f"the loop from {start} comes back to {name}, not to {start}")
        end_tasks = [_retries(state) for key, state in states.items() if state["Type"] == "Task" and key not in seen]
        return cls(tuple(tasks), choices, map_items, max(end_tasks, default=0), map_extra)

    def events_per_iteration(self, max_parallel_calls: int) -> int:
        """The most events one iteration can write with `max_parallel_calls` tool calls."""
        item = (
            _MAP_ITEM_EVENTS
            + self.map_item_extra_events
            + sum(_task_events(retries) for retries in self.map_item_task_retries)
        )
        return (
            sum(_task_events(retries) for retries in self.task_retries)
            + self.choices * _CHOICE_EVENTS
            + _MAP_EVENTS
            + max_parallel_calls * item
        )

    def events_per_run(self, max_iterations: int, max_parallel_calls: int) -> int:
        """The most events a run of `max_iterations` iterations can write, its start and end included."""
        end = _task_events(self.end_task_retries) + _END_STATE_EVENTS
        return _EXECUTION_EVENTS + max_iterations * self.events_per_iteration(max_parallel_calls) + end

    def most_iterations(self, max_parallel_calls: int) -> int:
        """The largest `max_iterations` whose worst case stays within `HISTORY_EVENT_LIMIT`."""
        per_iteration = self.events_per_iteration(max_parallel_calls)
        fixed = self.events_per_run(0, max_parallel_calls)
        return (HISTORY_EVENT_LIMIT - fixed) // per_iteration


def _costliest_item(states: dict[str, Any], name: str) -> tuple[tuple[int, ...], int]:
    """The retries of each Task on a Map item's costliest path from `name`, and its other events (Choices, a
    callback's submission): a call takes one branch of a Choice (a wait for approval, or for a child run)."""
    state = states[name]
    if state["Type"] == "Choice":
        branches = [choice["Next"] for choice in state["Choices"]] + [state["Default"]]
        tasks, extra = max((_costliest_item(states, branch) for branch in branches), key=_item_events)
        return tasks, extra + _CHOICE_EVENTS
    if state["Type"] != "Task":
        raise ValueError(f"state {name} ({state['Type']}) is not part of the Map item this module counts")
    callback = _CALLBACK_EVENTS if state.get("Resource", "").endswith(_CALLBACK_RESOURCES) else 0
    if state.get("End"):
        return (_retries(state),), callback
    tasks, extra = _costliest_item(states, state["Next"])
    return (_retries(state), *tasks), extra + callback


def _item_events(path: tuple[tuple[int, ...], int]) -> int:
    tasks, extra = path
    return sum(_task_events(retries) for retries in tasks) + extra


def _detours(name: str, state: dict[str, Any], states: dict[str, Any]) -> list[str]:
    """The Tasks a Catch of the Task `name` leads to that lead straight back to it."""
    return [
        catcher["Next"]
        for catcher in state.get("Catch", [])
        if states[catcher["Next"]]["Type"] == "Task" and states[catcher["Next"]].get("Next") == name
    ]


def _retries(state: dict[str, Any]) -> int:
    return sum(int(retrier.get("MaxAttempts", 3)) for retrier in state.get("Retry", []))


def _task_events(retries: int) -> int:
    return _TASK_EVENTS + retries * _RETRY_EVENTS


AGENT_LOOP = LoopShape(
    task_retries=(7, 7, 7, 7, 7),
    choices=2,
    map_item_task_retries=(7, 7),
    end_task_retries=7,
    map_item_extra_events=3,
)
"""The shape of statemachine/agent.asl.json: IterationGuard, NeedsCompaction, LLMCall, then Compact and LLMCall
again (a request too long for the model), Parse, Route, ToolInvoke (each call: NeedsApproval, AwaitApproval,
InvokeTool); Format. A wait at the budget (AwaitBudget, then IterationGuard again) is not counted: how many
there are is up to the people who answer them, not the limits."""
