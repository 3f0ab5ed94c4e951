"""Delegation decided with the calls: the child run's id, each child's share of its parent's time and budget,
and the depth bound (`stepwise.steps.delegation`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.models.messages import ToolCall
from stepwise.models.run import RunMeta
from stepwise.models.state import RunContext, RunSpend
from stepwise.steps.delegation import MAX_RESERVE_SECONDS, MIN_RESERVE_SECONDS, allotments, child_run_id, child_share
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore

NOW = 1_800_000_000.0
SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}


def context(
    *, seconds_left: float, tokens: int | None = None, cost: float | None = None, spent: RunSpend | None = None
) -> RunContext:
    return RunContext(
        profile="lead",
        deadline=NOW + seconds_left,
        expires_at=int(NOW) + 86_400,
        max_iterations=8,
        max_parse_errors=3,
        max_parallel_calls=4,
        max_total_tokens=tokens,
        max_cost_usd=cost,
        spend=spent or RunSpend(),
    )


def test_the_same_call_names_the_same_child_and_another_call_another() -> None:
    # Given a parent run's id, as long as a run id may be
    parent = "p" * 80
    # When the child id of a call is derived twice, and that of another call once
    first, again, other = (
        child_run_id(parent, "call_1_0"),
        child_run_id(parent, "call_1_0"),
        child_run_id(parent, "call_1_1"),
    )
    # Then the same call gives the same id, a valid execution name, and another call another id
    assert first == again != other
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,80}", first)
    assert child_run_id("other-parent", "call_1_0") != child_run_id("other-parent2", "call_1_0")


def test_children_share_most_of_what_is_left_and_never_outlive_the_parent() -> None:
    # Given a parent with 500 s, 10,000 tokens and $1 left of its caps (after spending 2,000 tokens and $0.20)
    spent = RunSpend(input_tokens=1500, output_tokens=300, delegated_tokens=200, cost_usd=0.1, delegated_cost_usd=0.1)
    run = context(seconds_left=500, tokens=12_000, cost=1.2, spent=spent)
    # When two children are started together
    share = child_share(run, NOW, 2)
    # Then each gets 80 % of what is left, halved, and both end 60 s (the largest reserve) before the parent
    assert share is not None
    assert (share.max_total_tokens, share.max_cost_usd) == (4000, 0.4)
    assert share.deadline == run.deadline - MAX_RESERVE_SECONDS


def test_a_parent_near_its_deadline_or_out_of_budget_starts_no_child() -> None:
    # Given parents with 12 s left (a child would get less than 10 s), or with their token budget spent
    short = context(seconds_left=12)
    spent = context(seconds_left=500, tokens=100, spent=RunSpend(input_tokens=100))
    # When a child's share is asked for
    # Then there is none; a parent with 20 s keeps the smallest reserve
    assert child_share(short, NOW, 1) is None
    assert child_share(spent, NOW, 1) is None
    roomy = child_share(context(seconds_left=20), NOW, 1)
    assert roomy is not None and roomy.deadline == NOW + 20 - MIN_RESERVE_SECONDS


@pytest.mark.parametrize(("depth", "starts"), [(None, True), (2, False)], ids=["root", "at-the-limit"])
def test_a_call_past_max_agent_depth_gets_no_share(depth: int | None, starts: bool, tmp_path: Path) -> None:
    # Given max_agent_depth 2, and a run at depth 1 (started by the API) or 2 (a child) that calls its agent
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": SCRIPTED},
            "profiles": {"lead": {"model": "m", "agents": ["researcher"]}, "researcher": {"model": "m"}},
            "default_profile": "lead",
            "max_agent_depth": 2,
        }
    )
    runtime = StepRuntime(
        config=config, config_dir=tmp_path, store=ConversationStore(None, "unused"), clock=lambda: NOW
    )
    meta = RunMeta(
        run_id="r",
        owner="o",
        profile="lead",
        deadline=NOW + 300,
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:00.000Z",
        expires_at=int(NOW) + 86_400,
        agent_depth=depth,
    )
    calls = [ToolCall(id="c0", name="researcher", arguments={"question": "?"}), ToolCall(id="c1", name="calculator")]
    # When Parse decides the calls' shares
    shares = allotments(meta, context(seconds_left=300), calls, runtime)
    # Then the root's agent call gets one (the other call none), and the child's call none: it would pass the depth
    assert shares is not None and shares[1] is None
    assert (shares[0] is not None) is starts
