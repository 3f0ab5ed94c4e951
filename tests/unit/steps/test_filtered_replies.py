"""A reply the provider's guardrail or content filter stopped ends the run with stop reason `guardrail`, on a moto
table: Bedrock Converse `guardrail_intervened` (its text is the guardrail's message, as recorded in vercel/ai's
amazon-bedrock-guard-content-intervened.json), `content_filtered`, and Anthropic's `refusal` (its response format in
Anthropic's "Handle streaming refusals" guide)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepwise.models.finish import FILTERED_NOTICE
from stepwise.models.messages import Completion, ToolCall
from stepwise.steps.format import format_run
from tests.unit.steps.test_format_step import QueuedModel, run_to_format, runtime_with

GUARDRAIL_MESSAGE = "Sorry, the model cannot answer this question."


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (Completion(content=GUARDRAIL_MESSAGE, finish_reason="guardrail_intervened"), GUARDRAIL_MESSAGE),
        (
            Completion(
                content="Here is how to",
                tool_calls=[ToolCall(id="t1", name="get_weather", arguments={"city": "Paris"})],
                finish_reason="content_filtered",
            ),
            FILTERED_NOTICE,
        ),
        # Anthropic's refusal as an OpenAI-wire gateway passes it on: the fragment before it is not the answer
        (Completion(content="Hello..", finish_reason="refusal"), FILTERED_NOTICE),
    ],
    ids=["guardrail_intervened", "content_filtered", "refusal"],
)
def test_a_reply_the_providers_filter_stopped_ends_the_run_as_a_guardrail_stop(
    reply: Completion, answer: str, dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a model call whose reply the provider's guardrail or content filter stopped
    runtime = runtime_with(QueuedModel(reply), dynamodb_table, tmp_path, strategy="function_calling")
    # When the run is parsed and formatted
    payload = run_to_format(runtime)
    result = format_run(payload, runtime)
    meta = runtime.store.require_run(payload.run_id)
    # Then nothing in the reply was run, and the run ended with stop reason guardrail and the provider's message
    # (or the notice, never the text the filter stopped)
    assert payload.next == "final_answer"
    assert (result.status, meta.stop_reason, meta.answer) == ("SUCCEEDED", "guardrail", answer)
