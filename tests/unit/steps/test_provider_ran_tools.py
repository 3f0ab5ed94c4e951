"""A tool the provider ran itself within a reply (Nova's web grounding) is recorded in the model step's trace and
never run here, on a moto table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepwise.models.messages import Completion
from tests.unit.steps.test_format_step import QueuedModel, run_to_format, runtime_with


def test_a_tool_the_provider_ran_is_noted_in_the_model_step_and_the_reply_is_the_answer(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a reply grounded by a search the provider ran itself
    reply = Completion(content="It became available on December 2, 2025.", server_tools=["nova_grounding"])
    runtime = runtime_with(QueuedModel(reply), dynamodb_table, tmp_path, strategy="function_calling")
    # When the model is called and its reply parsed
    payload = run_to_format(runtime)
    steps = runtime.store.list_steps(payload.run_id)
    # Then the model step names the tool the provider ran, and the reply is the answer, no tool run
    llm = next(step for step in steps if step.kind == "llm")
    assert "the provider ran nova_grounding itself" in (llm.note or "")
    assert payload.next == "final_answer"
    assert not [step for step in steps if step.kind == "tool"]
