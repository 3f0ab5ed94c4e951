"""Parse decides the tool policy's verdict on each call with the decision, on a moto table: a policy adds
reasons to wait (never removes one), and a call of no tool of the profile is not the policy's to decide."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunMeta
from stepwise.models.state import StatePayload, ToolInvokeEvent
from stepwise.steps.format import format_run
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.replays import prepare_replay
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_invoke import tool_invoke
from stepwise.store import ConversationStore
from tests.support.launch_tool import MODULE

POLICY = """
@id("calculator-asks") @approval("required")
permit(principal, action, resource == Stepwise::Tool::"calculator");

@id("launch-is-fine")
permit(principal, action, resource == Stepwise::Tool::"launch");
"""
CALLS = [
    {"name": "launch", "arguments": {"target": "moon"}},
    {"name": "calculator", "arguments": {"expression": "1+1"}},
    {"name": "ghost", "arguments": {}},
]


@pytest.fixture
def config_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "launch_tools.py").write_text(MODULE, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("launch_tools", None)
    if str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def runtime_calling(calls: list[dict[str, Any]], dynamodb_table: tuple[Any, str], config_dir: Path) -> StepRuntime:
    """A runtime whose model asks for `calls`: `launch` requires approval but the policy permits it plainly,
    and the policy permits the calculator with approval required."""
    model = {
        "provider": "scripted",
        "scenarios": [{"turns": [{"tool_calls": calls}]}],
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": model},
            "tools": {"python": [{"module": "launch_tools", "requires_approval": True}], "builtin": ["calculator"]},
            "profiles": {"default": {"model": "m", "strategy": "function_calling", "policy": POLICY}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    return StepRuntime(config=config, config_dir=config_dir, store=ConversationStore(client, table_name))


def parsed(runtime: StepRuntime, meta: RunMeta) -> StatePayload:
    """The run's first iteration, up to its decision."""
    payload = llm_call(iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime), runtime)
    return parse(payload, runtime)


def test_parse_gives_each_call_its_verdict_and_its_wait(dynamodb_table: tuple[Any, str], config_dir: Path) -> None:
    # Given a model that calls `launch`, the calculator and a tool the profile does not have
    runtime = runtime_calling(CALLS, dynamodb_table, config_dir)
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    # When Parse decides the calls
    decided = parsed(runtime, meta)
    # Then both tools' calls wait (the tool's own reason and the policy's), the unknown one does not, and only
    # the calculator's verdict is a policy step
    steps = runtime.store.list_steps(meta.run_id)
    decision = next(step for step in steps if step.kind == "parse")
    assert [call.approval_timeout_seconds is not None for call in decided.calls] == [True, True, False]
    assert [verdict and verdict.effect for verdict in decision.verdicts or []] == ["permit", "approval", None]
    assert [(step.n, step.action) for step in steps if step.kind == "policy"] == [(1, "calculator")]


def test_a_replay_never_makes_live_a_call_the_policy_holds_for_approval(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a replay allowed to call read-only tools live, of a run that never called the calculator
    runtime = runtime_calling([CALLS[1]], dynamodb_table, config_dir)
    original = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    ended = runtime.store.finish_run(original, "SUCCEEDED", stop_reason="final_answer", outcome="answered", answer="ok")
    replay = prepare_replay(runtime, ended, owner="alice", live_tools=True)
    decided = parsed(runtime, replay)
    # When its calculator call, which the policy holds for approval, is invoked
    item = {"run_id": replay.run_id, "iteration": 1, "index": 0, "call": decided.calls[0]}
    tool_invoke(ToolInvokeEvent.model_validate(item), runtime)
    # Then it did not wait, and it was not made: its observation says a replay never asks for approval
    observation = runtime.store.list_messages(replay.run_id)[-1]
    assert decided.calls[0].approval_timeout_seconds is None
    assert "needs approval, which a replay never asks for" in observation.content


def test_a_run_whose_every_call_the_policy_refused_does_not_succeed_with_the_refusals_as_its_answer(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a profile whose policy refuses every call, and a run whose model called the calculator
    runtime = runtime_calling([CALLS[1]], dynamodb_table, config_dir)
    runtime.config.profiles["default"].policy = '@id("nothing") forbid(principal, action, resource);'
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    decided = parsed(runtime, meta)
    item = {"run_id": meta.run_id, "iteration": 1, "index": 0, "call": decided.calls[0]}
    tool_invoke(ToolInvokeEvent.model_validate(item), runtime)
    # When the run ends at its budget with no further model call (a person answered its wait with end)
    ended = decided.model_copy(update={"final_round": True, "final_round_reason": "token_budget", "next": "limit_hit"})
    format_run(ended, runtime)
    # Then no tool returned anything: the run failed with no answer, not SUCCEEDED with the refusal as its answer
    stored = runtime.store.require_run(meta.run_id)
    assert (stored.status, stored.outcome, stored.answer) == ("FAILED", "none", None)
    assert stored.error is not None and stored.error.type == "NoAnswer"


def test_the_policy_sees_what_the_run_spent_with_its_child_runs_as_its_budget_counts_it(
    dynamodb_table: tuple[Any, str], config_dir: Path
) -> None:
    # Given a policy refusing the calculator once a run has spent over 1,000 tokens, and a run that spent 30 of
    # its own and whose child runs spent 5,000
    runtime = runtime_calling([CALLS[1]], dynamodb_table, config_dir)
    runtime.config.profiles["default"].policy = (
        '@id("thrifty") forbid(principal, action, resource) when { context.spent.tokens > 1000 };\n'
        "permit(principal, action, resource);"
    )
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    called = llm_call(iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime), runtime)
    assert called.run is not None
    spend = called.run.spend.model_copy(update={"delegated_tokens": 5_000})
    delegated = called.model_copy(update={"run": called.run.model_copy(update={"spend": spend})})
    # When Parse decides the model's call
    parse(delegated, runtime)
    # Then the policy refused it: its spend is the one the budget compares against its cap
    decision = next(step for step in runtime.store.list_steps(meta.run_id) if step.kind == "parse")
    assert [verdict and verdict.effect for verdict in decision.verdicts or []] == ["forbid"]
