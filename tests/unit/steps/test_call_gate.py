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
from stepwise.models.state import StatePayload
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
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


def test_parse_gives_each_call_its_verdict_and_its_wait(dynamodb_table: tuple[Any, str], config_dir: Path) -> None:
    # Given `launch` requiring approval but permitted plainly, the calculator permitted with approval required,
    # and a model that calls both and a tool the profile does not have
    model = {
        "provider": "scripted",
        "scenarios": [{"turns": [{"tool_calls": CALLS}]}],
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
    runtime = StepRuntime(config=config, config_dir=config_dir, store=ConversationStore(client, table_name))
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="default")
    payload = llm_call(iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime), runtime)
    # When Parse decides the calls
    decided = parse(payload, runtime)
    # Then both tools' calls wait (the tool's own reason and the policy's), the unknown one does not, and only
    # the calculator's verdict is a policy step
    steps = runtime.store.list_steps(meta.run_id)
    decision = next(step for step in steps if step.kind == "parse")
    assert [call.approval_timeout_seconds is not None for call in decided.calls] == [True, True, False]
    assert [verdict and verdict.effect for verdict in decision.verdicts or []] == ["permit", "approval", None]
    assert [(step.n, step.action) for step in steps if step.kind == "policy"] == [(1, "calculator")]
