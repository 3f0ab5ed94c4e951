"""A tool result longer than what the model receives is kept whole, apart from the call's message: through the
real ToolInvoke step on a moto table, in parts under DynamoDB's item limit, written again to the same keys on a
retry, scrubbed of secrets as the model's copy is, cut at the profile's `max_stored_output_chars`, and read
back whole by the step endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError
from stepwise.models.messages import ChatMessage, Completion, ToolCall
from stepwise.models.step_record import StepRecord
from stepwise.steps import tool_invoke
from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.api.overview import describe_overview
from stepwise.steps.api.run_views import describe_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.api.step_views import fit_answer, step_observation
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.store.item_limit import MAX_ITEM_BYTES, item_size
from tests.unit.steps.span_runtime import LOOPBACK_MODEL, QueuedModel, to_the_first_tool_call

MILLION = 1_000_000
CAP = 4000
SECRET = "sk-whole-output-secret-0123456789"
MARK = "***"
# the tool's answer: past the model's cut, a secret; once scrubbed, 1,000,000 characters
TOOLS = f'''
from stepwise.tools import tool


@tool
def flood(size: int) -> str:
    """Answer `size` characters.

    Args:
        size: How many.
    """
    half = size // 2
    return "é" * half + "{SECRET}" + "x" * (size - half - {len(MARK)} - 4) + "tail"


@tool
def mail(size: int) -> str:
    """Answer `size` characters, then an email address.

    Args:
        size: How many before it.
    """
    return "x" * size + " jo@example.com"
'''
WHOLE = "é" * (MILLION // 2) + MARK + "x" * (MILLION - MILLION // 2 - len(MARK) - 4) + "tail"


FLOOD = ToolCall(id="call_f", name="flood", arguments={"size": MILLION})


def runtime_for(
    table: tuple[Any, str], tmp_path: Path, *, call: ToolCall = FLOOD, guardrails: Any = None, **limits: Any
) -> StepRuntime:
    """A runtime whose model calls `call` (`flood` for 1,000,000 characters); its api key is a secret."""
    (tmp_path / "whole_floods.py").write_text(TOOLS, encoding="utf-8")
    profile = {"model": "m", "strategy": "function_calling", "limits": {"max_observation_chars": CAP} | limits}
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": LOOPBACK_MODEL | {"api_key": SECRET}},
            "tools": {"python": [{"module": "whole_floods"}]},
            "profiles": {"default": profile | ({"guardrails": guardrails} if guardrails else {})},
        },
        environ={},
    )
    model = QueuedModel(Completion(tool_calls=[call]))
    client, table_name = table
    return StepRuntime(
        config=config, config_dir=tmp_path, store=ConversationStore(client, table_name), chat_models={"m": model}
    )


def run_to_the_tool_call(runtime: StepRuntime) -> tuple[str, dict[str, Any]]:
    """A run through its first model call; its id and the ToolInvoke Map item of the call."""
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="flood me")], owner="o", profile="default")
    return meta.run_id, to_the_first_tool_call(runtime, meta.run_id)[1]


def run_past_the_tool_call(runtime: StepRuntime) -> str:
    """A run through its first model call and the ToolInvoke of the call it asked for; its id."""
    run_id, item = run_to_the_tool_call(runtime)
    tool_invoke.handle(item, runtime)
    return run_id


def stored_items(table: tuple[Any, str], run_id: str, prefix: str) -> list[dict[str, Any]]:
    """Every item of the run whose sort key starts with `prefix`, across Query pages (1 MB each)."""
    client, table_name = table
    pages = client.get_paginator("query").paginate(
        TableName=table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": f"RUN#{run_id}"}, ":prefix": {"S": prefix}},
        ConsistentRead=True,
    )
    return [item for page in pages for item in page["Items"]]


def tool_step(runtime: StepRuntime, run_id: str) -> StepRecord:
    return next(step for step in runtime.store.list_steps(run_id, iteration=1) if step.kind == "tool")


def api_services(runtime: StepRuntime, table: tuple[Any, str]) -> ApiServices:
    client, table_name = table
    return ApiServices(
        runtime=runtime,
        executions=StepFunctionsExecutions(
            boto3.client("stepfunctions", region_name="us-east-1"),
            "arn:aws:states:us-east-1:123456789012:stateMachine:agent",
        ),
        idempotency=IdempotentStarts(client, table_name),
    )


def test_a_1mb_result_is_kept_whole_in_parts_scrubbed_and_written_again_to_the_same_keys_on_a_retry(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run whose model called `flood`, which answers 1,000,000 characters with a secret past the cut
    runtime = runtime_for(dynamodb_table, tmp_path)
    run_id, item = run_to_the_tool_call(runtime)
    # When ToolInvoke runs the call
    tool_invoke.handle(item, runtime)
    # Then the whole result is kept in parts, each well under the item limit, the secret scrubbed from it
    parts = stored_items(dynamodb_table, run_id, "TOOLOUT#")
    assert len(parts) > 1 and all(item_size(part) <= MAX_ITEM_BYTES * 0.8 for part in parts)
    assert "".join(part["text"]["S"] for part in parts) == WHOLE
    # And the trace step says how long it is and in how many parts, the model's copy cut as before
    step = tool_step(runtime, run_id)
    assert (step.output_chars, step.stored_output_chars, step.stored_output_parts) == (MILLION, MILLION, len(parts))
    assert (step.observation_chars, step.stored_output_cut) == (CAP, None)
    # When the step is retried after a crash that lost its message (its commit record) but not the parts
    client, table_name = dynamodb_table
    client.delete_item(TableName=table_name, Key={"pk": {"S": f"RUN#{run_id}"}, "sk": {"S": "MSG#0001#001"}})
    tool_invoke.handle(item, runtime)
    # Then the same items are written again, none added
    assert stored_items(dynamodb_table, run_id, "TOOLOUT#") == parts
    # And the step endpoint answers the whole result, saying so, beside the size the model received
    whole = step_observation(
        api_services(runtime, dynamodb_table), owner="o", run_reference=run_id, iteration=1, call_id="call_f"
    )
    assert (whole.observation == WHOLE, whole.observation_chars, whole.source, whole.whole, whole.cut) == (
        True,
        MILLION,
        "stored_output",
        True,
        None,
    )
    assert (whole.received_chars, whole.output_chars, whole.observation_bytes) == (CAP, MILLION, len(WHOLE.encode()))


def test_a_result_past_the_stored_limit_is_kept_cut_with_the_marker_and_the_step_says_so(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a profile that keeps at most 300,000 characters of a result
    runtime = runtime_for(dynamodb_table, tmp_path, max_stored_output_chars=300_000)
    run_id, item = run_to_the_tool_call(runtime)
    # When ToolInvoke runs the call that answers 1,000,000
    tool_invoke.handle(item, runtime)
    # Then 300,000 characters are kept, ending with the marker that says how many were left out
    kept = "".join(part["text"]["S"] for part in stored_items(dynamodb_table, run_id, "TOOLOUT#"))
    dropped = MILLION - len(kept) + len(kept.rsplit("…", 1)[1]) + 1
    assert (len(kept), kept.endswith(f"…[truncated {dropped} chars]")) == (300_000, True)
    # And the step says it was cut, and the step endpoint that it is not the whole result, and how much of it it is
    step = tool_step(runtime, run_id)
    assert (step.stored_output_chars, step.stored_output_cut) == (300_000, True)
    whole = step_observation(
        api_services(runtime, dynamodb_table), owner="o", run_reference=run_id, iteration=1, call_id="call_f"
    )
    assert (whole.observation == kept, whole.source, whole.whole, whole.cut) == (
        True,
        "stored_output",
        False,
        "stored_limit",
    )
    assert whole.result_chars == MILLION - dropped


MAIL = ToolCall(id="call_m", name="mail", arguments={"size": 2 * CAP})


def test_the_whole_result_passes_the_tool_result_guardrails_as_the_models_copy_does(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a profile whose tool-result rules redact email addresses, and a tool whose address is past the cut
    runtime = runtime_for(dynamodb_table, tmp_path, call=MAIL, guardrails={"tool_results": [{"pii": ["email"]}]})
    run_id, item = run_to_the_tool_call(runtime)
    # When ToolInvoke runs the call
    tool_invoke.handle(item, runtime)
    # Then the whole result is kept with the address redacted
    kept = "".join(part["text"]["S"] for part in stored_items(dynamodb_table, run_id, "TOOLOUT#"))
    assert kept == "x" * 2 * CAP + " [email]"


def test_a_whole_result_a_guardrail_blocks_is_not_kept_and_the_step_endpoint_answers_the_models_copy(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a profile whose tool-result rules block results naming an address, past the cut of the model's copy
    guardrails = {"tool_results": [{"deny": ["jo@example"]}]}
    runtime = runtime_for(dynamodb_table, tmp_path, call=MAIL, guardrails=guardrails)
    run_id, item = run_to_the_tool_call(runtime)
    # When ToolInvoke runs the call
    tool_invoke.handle(item, runtime)
    # Then nothing of the whole result is stored, and the step endpoint answers what the model received
    assert stored_items(dynamodb_table, run_id, "TOOLOUT#") == []
    services = api_services(runtime, dynamodb_table)
    shown = step_observation(services, owner="o", run_reference=run_id, iteration=1, call_id="call_m")
    assert (shown.source, shown.whole, shown.cut, shown.observation_chars, "jo@example" in shown.observation) == (
        "message",
        False,
        "not_kept",
        CAP,
        False,
    )


def test_a_stored_limit_below_what_the_model_receives_is_refused_naming_both() -> None:
    # Given a profile keeping less of a result than its model receives
    profile = {"model": "m", "limits": {"max_observation_chars": 5000, "max_stored_output_chars": 4000}}
    # When the configuration is read, then it is refused, naming both limits
    with pytest.raises(
        (ConfigError, ValueError), match="max_stored_output_chars=4000 is below max_observation_chars=5000"
    ):
        StepwiseConfig.from_mapping(
            {"models": {"m": {"provider": "scripted", "scenarios": []}}, "profiles": {"default": profile}}
        )


def test_a_text_too_long_for_one_lambda_response_is_cut_to_fit_with_the_marker() -> None:
    # Given text that JSON escapes six times over (control characters), and a text that needs no escape
    escaped, plain = "\u0001" * 10_000, "x" * 10_000
    # When each is fitted to an answer of 20,000 bytes
    cut, whole = fit_answer(escaped, limit=20_000)
    # Then the first is cut, with the marker, to what fits; the second is left whole
    assert (whole, "…[truncated" in cut, len(json.dumps(json.dumps(cut))) <= 20_000) == (False, True, True)
    assert fit_answer(plain, limit=20_000) == (plain, True)


def test_a_replay_copies_the_whole_results_of_the_iterations_it_keeps(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run whose first iteration kept a whole result
    runtime = runtime_for(dynamodb_table, tmp_path, call=MAIL)
    run_id = run_past_the_tool_call(runtime)
    original = runtime.store.require_run(run_id)
    # When a replay keeping that iteration is stored
    replay = original.model_copy(update={"run_id": "replay-of-mail"})
    assert runtime.store.create_replay_run(replay, run_id, 1)
    # Then the replay holds the same parts under its own key
    copied = stored_items(dynamodb_table, "replay-of-mail", "TOOLOUT#")
    assert [part["text"] for part in copied] == [
        part["text"] for part in stored_items(dynamodb_table, run_id, "TOOLOUT#")
    ]
    assert copied


def test_the_run_and_overview_answers_of_a_run_with_a_1mb_result_stay_small_and_say_how_long_it_was(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run whose tool answered 1,000,000 characters, kept whole apart
    runtime = runtime_for(dynamodb_table, tmp_path)
    run_id = run_past_the_tool_call(runtime)
    services = api_services(runtime, dynamodb_table)
    # When the console's run and compare views read the run with its trace (GET /v1/runs/{id}?trace=true)
    view = describe_run(services, owner="o", run_reference=run_id, trace=True)
    # Then the answer carries the step's start, not the whole result, and says how long the result was
    [step] = [step for step in view.trace or [] if step.kind == "tool"]
    assert len(view.model_dump_json()) < 20_000
    assert (step.observation is not None and step.observation.startswith("éé"), step.output_chars) == (True, MILLION)
    # And the overview (GET /v1/overview) counts the run as any other
    assert describe_overview(services, owner="o", days=1).totals.runs == 1
