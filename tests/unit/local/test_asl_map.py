"""Map states: item order, MaxConcurrency, ItemSelector with $$.Map.Item, legacy Iterator/Parameters."""

from __future__ import annotations

import threading
import time
from typing import Any

from stepwise.local.asl import LocalStateMachine

from .support import ScriptedInvoker, load_asl


class ConcurrencyProbe:
    """A tool that records how many calls are inside it at once.

    Calls wait on a barrier of `group_size`, which proves that many run together; they then stay
    inside a moment longer, so that an engine starting more than that at once would be seen doing it.
    """

    def __init__(self, group_size: int) -> None:
        self.inside = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(group_size, timeout=10)

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
        try:
            self.barrier.wait()
            time.sleep(0.02)
        finally:
            with self.lock:
                self.inside -= 1
        return {"observed": payload["call"]["name"], "index": payload["index"]}


def test_map_runs_at_most_max_concurrency_items_at_once() -> None:
    # Given a Map with MaxConcurrency 2 whose tool only returns when two calls are inside it
    probe = ConcurrencyProbe(group_size=2)
    machine = LocalStateMachine(load_asl("map.asl.json"), ScriptedInvoker({"tool": probe}))
    calls = [{"name": f"tool-{n}"} for n in range(6)]

    # When it runs six items
    result = machine.start_execution("run-1", {"run_id": "r1", "calls": calls})

    # Then the items ran two at a time, never more
    assert result.status == "SUCCEEDED"
    assert probe.peak == 2


def test_map_results_are_in_item_order_whatever_the_finishing_order() -> None:
    # Given a tool where the first item can only finish after the second one has
    second_done = threading.Event()

    def tool(payload: dict[str, Any]) -> dict[str, Any]:
        if payload["index"] == 0:
            assert second_done.wait(timeout=10)
        else:
            second_done.set()
        return {"observed": payload["call"]["name"]}

    machine = LocalStateMachine(load_asl("map.asl.json"), ScriptedInvoker({"tool": tool}))

    # When the Map runs both items
    result = machine.start_execution("run-1", {"run_id": "r1", "calls": [{"name": "a"}, {"name": "b"}]})

    # Then the results are listed by item index
    assert result.output["observations"] == [{"observed": "a"}, {"observed": "b"}]


def test_item_selector_reads_map_item_value_index_and_the_map_input() -> None:
    # Given a Map whose ItemSelector uses $$.Map.Item.Value, $$.Map.Item.Index and $.run_id
    invoker = ScriptedInvoker({"tool": lambda payload: payload})
    machine = LocalStateMachine(load_asl("map.asl.json"), invoker, max_workers=1)

    # When it runs two items
    machine.start_execution("run-1", {"run_id": "r9", "calls": [{"name": "a"}, {"name": "b"}]})

    # Then each item's input was built from its own value and index
    assert invoker.payloads("tool") == [
        {"call": {"name": "a"}, "index": 0, "run_id": "r9"},
        {"call": {"name": "b"}, "index": 1, "run_id": "r9"},
    ]


def test_item_events_carry_their_map_index() -> None:
    # Given the Map machine
    machine = LocalStateMachine(load_asl("map.asl.json"), ScriptedInvoker({"tool": lambda payload: {}}))

    # When it runs three items
    result = machine.start_execution("run-1", {"run_id": "r", "calls": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})

    # Then the inner state's events name their item, and the Map's own events have none
    inner = sorted(
        event.map_index
        for event in result.history
        if event.state == "Invoke" and event.type == "exited" and event.map_index is not None
    )
    outer = {event.map_index for event in result.history if event.state == "Fan"}
    assert inner == [0, 1, 2]
    assert outer == {None}


def test_legacy_iterator_with_parameters_and_unbounded_concurrency() -> None:
    # Given a Map written with Iterator and Parameters, MaxConcurrency 0
    machine = LocalStateMachine(load_asl("map_legacy.asl.json"), ScriptedInvoker({}))

    # When it runs over three names
    result = machine.start_execution("run-1", {"names": ["ann", "bob", "cy"]})

    # Then every item was processed, in order
    assert result.output == ["0:ann", "1:bob", "2:cy"]


def test_a_failing_item_fails_the_map_with_that_error() -> None:
    # Given a tool that fails on one item
    def tool(payload: dict[str, Any]) -> dict[str, Any]:
        if payload["call"]["name"] == "bad":
            raise KeyError("no such tool")
        return {}

    machine = LocalStateMachine(load_asl("map.asl.json"), ScriptedInvoker({"tool": tool}))

    # When the Map runs it
    result = machine.start_execution("run-1", {"run_id": "r", "calls": [{"name": "ok"}, {"name": "bad"}]})

    # Then the execution fails with the item's error name
    assert result.status == "FAILED"
    assert result.error == "KeyError"


def test_items_path_that_is_not_an_array_is_a_runtime_error() -> None:
    # Given the Map machine
    machine = LocalStateMachine(load_asl("map.asl.json"), ScriptedInvoker({"tool": lambda payload: {}}))

    # When calls is an object
    result = machine.start_execution("run-1", {"run_id": "r", "calls": {"name": "a"}})

    # Then the execution fails with States.Runtime
    assert result.error == "States.Runtime"


def test_max_concurrency_path_reads_the_limit_from_the_input() -> None:
    # Given the Map machine with MaxConcurrencyPath instead of MaxConcurrency, and a limit of 3
    definition = load_asl("map.asl.json")
    del definition["States"]["Fan"]["MaxConcurrency"]
    definition["States"]["Fan"]["MaxConcurrencyPath"] = "$.limit"
    probe = ConcurrencyProbe(group_size=3)
    machine = LocalStateMachine(definition, ScriptedInvoker({"tool": probe}))
    calls = [{"name": f"tool-{n}"} for n in range(6)]

    # When it runs six items
    result = machine.start_execution("run-1", {"run_id": "r", "calls": calls, "limit": 3})

    # Then they ran three at a time
    assert result.status == "SUCCEEDED"
    assert probe.peak == 3
