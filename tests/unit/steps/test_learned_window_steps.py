"""The window a refusal states travels with the run: Compact, perhaps in another container than the LLMCall the
provider refused, reads it from the caught error and puts it in the payload's run context (moto table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepwise.models.messages import Completion
from stepwise.models.state import CompactEvent
from stepwise.steps.compaction import compact
from tests.unit.steps.test_format_step import QueuedModel, run_to_format, runtime_with

REFUSAL = (
    "model m: HTTP 400 (context_length_exceeded): This model's maximum context length is 10000 tokens. "
    "However, your messages resulted in 10921 tokens. Please reduce the length of the messages."
)


def test_compact_learns_the_window_the_caught_refusal_states(dynamodb_table: tuple[Any, str], tmp_path: Path) -> None:
    # Given a run whose model call was refused, the refusal stating the window, caught as Step Functions records it
    runtime = runtime_with(QueuedModel(Completion(content="Rainy.")), dynamodb_table, tmp_path)
    payload = run_to_format(runtime)
    cause = json.dumps({"errorMessage": REFUSAL, "errorType": "ContextWindowExceeded"})
    event = CompactEvent.model_validate(
        payload.model_dump() | {"overflow": {"Error": "ContextWindowExceeded", "Cause": cause}}
    )
    assert payload.run is not None and payload.run.learned_window is None
    # When Compact runs
    compacted = compact(event, runtime)
    # Then the payload's run context carries the window, for every later step of the run
    assert compacted.run is not None and compacted.run.learned_window == 10_000
