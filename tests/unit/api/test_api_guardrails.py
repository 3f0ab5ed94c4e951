"""Guardrails seen through the API: a blocked input answered without starting anything, a stream's redaction,
the model's text in a run's trace and events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.models.chat_api import ChatCompletionRequest, ChatStreamStart
from stepwise.models.messages import ChatMessage, ReasoningBlock
from stepwise.models.run import RunUsage
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.chat import chat_completion_of, complete_chat
from stepwise.steps.api.chat_stream import chat_chunks
from stepwise.steps.api.events import run_events
from stepwise.steps.api.idempotency import IdempotentStarts
from stepwise.steps.api.problems import GuardrailBlocked, NotFound
from stepwise.steps.api.run_views import describe_run
from stepwise.steps.api.services import ApiServices
from stepwise.steps.api.step_views import step_observation
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from tests.unit.api.conftest import STATE_MACHINE_ARN, FakeTime, api_config

MESSAGE = "I can only help with orders."
GUARDRAILS = {
    "input": [{"deny": ["(?i)\\bsystem prompt\\b"], "label": "injection"}],
    "output": [{"pii": ["email"]}],
    "message": MESSAGE,
}


@pytest.fixture
def services(dynamodb_table: tuple[Any, str]) -> Iterator[ApiServices]:
    """The API's services for a profile with input and output guardrails; Step Functions stubbed, expecting
    nothing (a call it was not told of fails the test)."""
    client, table = dynamodb_table
    fake_time = FakeTime()
    config = api_config(profiles={"default": {"model": "m", "guardrails": GUARDRAILS}})
    runtime = StepRuntime(
        config=config, config_dir=Path("."), store=ConversationStore(client, table), clock=fake_time.clock
    )
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    with Stubber(stepfunctions) as stubber:
        yield ApiServices(
            runtime=runtime,
            executions=StepFunctionsExecutions(stepfunctions, STATE_MACHINE_ARN),
            idempotency=IdempotentStarts(client, table),
            sleep=fake_time.sleep,
            monotonic=fake_time.clock,
        )
        stubber.assert_no_pending_responses()


def test_a_chat_completion_whose_input_is_blocked_is_a_400_with_the_profiles_message_and_starts_no_execution(
    services: ApiServices,
) -> None:
    # Given a chat request asking for the system prompt
    body = {"model": "default", "messages": [{"role": "user", "content": "system prompt?"}]}
    request = ChatCompletionRequest.model_validate(body)
    # When it is answered
    with pytest.raises(GuardrailBlocked) as raised:
        complete_chat(services, owner="o", request=request, request_body=body)
    # Then the answer is 400 `guardrail_blocked` with the profile's message, and the run ended as it was created
    assert (raised.value.status, raised.value.type, raised.value.message) == (400, "guardrail_blocked", MESSAGE)
    run = services.runtime.store.require_run(raised.value.details["run_id"])
    assert (run.status, run.stop_reason, run.iteration) == ("FAILED", "guardrail", 0)


def test_a_streamed_step_is_screened_by_the_output_rules_before_it_leaves(services: ApiServices) -> None:
    # Given a run whose model wrote an email address in its thinking, then an answer not yet checked by Format
    runtime = services.runtime
    run = create_run(runtime, messages=[ChatMessage(role="user", content="hi")], owner="o", profile="default")
    thought = ReasoningBlock(text="Mail jo@example.com about it.")
    message = ChatMessage(role="assistant", content="Done.", reasoning=[thought])
    runtime.store.record_message(run, 1, 0, message, StepRecord(iteration=1, kind="llm"))
    decision = StepRecord(iteration=1, kind="parse", decision="final_answer", answer="Write to jo@example.com.")
    runtime.store.record_decision(run, decision, [])
    start = ChatStreamStart(run_id=run.run_id, model="default", created=0, include_usage=False, profile="default")
    # When the stream's chunks are read up to the decision
    chunks = chat_chunks(runtime, owner="o", start=start, poll_seconds=1.0, sleep=lambda seconds: None)
    _, _, reasoning, parsed = (json.loads(frame.removeprefix(b"data: ")) for frame in islice(chunks, 4))
    # Then the thinking left with the marker in place of the address, and the decision without its answer
    assert reasoning["choices"][0]["delta"] == {"reasoning_content": "Mail [email] about it."}
    assert parsed["stepwise_step"]["kind"] == "parse" and "answer" not in parsed["stepwise_step"]


def run_with_model_text(runtime: StepRuntime) -> str:
    """A run whose model wrote an email address in its thinking, in its thought and in a call's arguments."""
    run = create_run(runtime, messages=[ChatMessage(role="user", content="hi")], owner="o", profile="default")
    thinking = ReasoningBlock(text="Mail jo@example.com about it.")
    message = ChatMessage(role="assistant", content="I will mail jo@example.com.", reasoning=[thinking])
    runtime.store.record_message(run, 1, 0, message, StepRecord(iteration=1, kind="llm"))
    call = {"id": "call_1", "name": "notify", "arguments": {"to": "jo@example.com"}}
    decision = StepRecord(
        iteration=1, kind="parse", decision="tool_calls", thought="I will mail jo@example.com.", calls=[call]
    )
    runtime.store.record_decision(run, decision, [])
    return run.run_id


@pytest.mark.parametrize("route", ["trace", "events"])
def test_the_models_text_is_shown_through_the_output_pii_rules_and_a_calls_arguments_as_sent(
    services: ApiServices, route: str
) -> None:
    # Given a run whose model's thinking, thought and call all hold an email address, stored as written
    run_id = run_with_model_text(services.runtime)
    # When its steps are read, by `GET /v1/runs/{id}?trace=true` or by the events route
    if route == "trace":
        steps = describe_run(services, owner="o", run_reference=run_id, trace=True).trace or []
    else:
        steps = run_events(services.runtime, owner="o", run_reference=run_id, after=None).events
    # Then the thinking and the thought show the marker; the call's arguments are what the tool would receive
    reasoning, parsed = (next(step for step in steps if step.kind == kind) for kind in ("reasoning", "parse"))
    assert reasoning.thought == "Mail [email] about it."
    assert parsed.thought == "I will mail [email]."
    assert parsed.calls == [{"id": "call_1", "name": "notify", "arguments": {"to": "jo@example.com"}}]


def test_a_chat_completions_reasoning_content_passes_the_output_pii_rules(services: ApiServices) -> None:
    # Given an ended run whose model's thinking holds an email address, stored as written
    store = services.runtime.store
    run_id = run_with_model_text(services.runtime)
    meta = store.finish_run(
        store.require_run(run_id),
        "SUCCEEDED",
        stop_reason="final_answer",
        outcome="answered",
        answer="Mailed.",
        usage=RunUsage(),
        iteration=1,
    )
    # When it is answered as a chat completion under the profile's guardrails
    guardrails = services.runtime.profile("default").guardrails
    completion = chat_completion_of(store, meta, model="default", created=0, guardrails=guardrails)
    # Then its reasoning_content shows the marker
    assert completion.choices[0].message.reasoning_content == "Mail [email] about it."


def test_a_steps_whole_observation_is_shown_through_the_output_pii_rules_and_to_its_owner_only(
    services: ApiServices,
) -> None:
    # Given a run whose tool answered an email address, stored as the model received it
    run_id = run_with_model_text(services.runtime)
    run = services.runtime.store.require_run(run_id)
    observation = ChatMessage(role="tool", content="Sent to jo@example.com.", tool_call_id="call_1", name="notify")
    step = StepRecord(iteration=1, kind="tool", n=0, action="notify", call_id="call_1", ok=True)
    services.runtime.store.record_message(run, 1, 1, observation, step)
    # When its step is read whole by its owner
    whole = step_observation(services, owner="o", run_reference=run_id, iteration=1, call_id="call_1")
    # Then it shows the marker, as the trace does, and its size is the size shown
    assert (whole.observation, whole.observation_chars, whole.tool) == ("Sent to [email].", 16, "notify")
    # And another owner, or a call the iteration did not make, finds nothing
    with pytest.raises(NotFound):
        step_observation(services, owner="someone-else", run_reference=run_id, iteration=1, call_id="call_1")
    with pytest.raises(NotFound):
        step_observation(services, owner="o", run_reference=run_id, iteration=2, call_id="call_1")
