"""A run's deadline under the Express workflow: capped below the 5 minutes Express allows an execution."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.models.run import EXPRESS_EXECUTION_SECONDS, EXPRESS_RUN_SECONDS
from stepwise.steps.runs import new_run_meta
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore


@pytest.fixture
def runtime(dynamodb_table: tuple[Any, str], tmp_path: Path) -> StepRuntime:
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "unused"}]}]}},
            "profiles": {"default": {"model": "m", "limits": {"max_execution_seconds": 900}}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    return StepRuntime(
        config=config, config_dir=tmp_path, store=ConversationStore(client, table_name), clock=lambda: 1000.0
    )


def test_an_express_run_ends_its_loop_before_express_stops_its_execution(runtime: StepRuntime) -> None:
    # Given a profile that allows 900 s, on an Express deployment
    # When a run is made
    meta = new_run_meta(runtime, owner="alice", profile="default", workflow_type="EXPRESS")
    # Then its deadline leaves the final round and Format room inside Express's 300 s
    assert meta.limits.max_execution_seconds == EXPRESS_RUN_SECONDS < EXPRESS_EXECUTION_SECONDS
    assert meta.deadline == 1000.0 + EXPRESS_RUN_SECONDS


def test_a_standard_run_keeps_its_profiles_deadline(runtime: StepRuntime) -> None:
    # Given the same profile on a Standard deployment / When a run is made / Then its 900 s stand
    meta = new_run_meta(runtime, owner="alice", profile="default")
    assert meta.limits.max_execution_seconds == 900
