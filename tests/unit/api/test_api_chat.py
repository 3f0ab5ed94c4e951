"""The chat completions facade: waiting for a run, the completion it answers with, and the SSE stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import islice
from typing import Any

import pytest
from botocore.stub import ANY
from openai.types.chat import ChatCompletion as SdkCompletion

from stepwise.models.api_requests import RunRequest
from stepwise.models.chat_api import ChatCompletion, ChatCompletionRequest, ChatStreamStart
from stepwise.models.messages import ChatMessage, ReasoningBlock, ToolSpec
from stepwise.models.run import RunError, RunMeta, RunOptions, RunUsage
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.chat import (
    FIRST_POLL_SECONDS,
    MAX_POLL_SECONDS,
    await_run,
    chat_completion_of,
    completion_events,
    describe_model,
    list_models,
    queue_chat_run,
)
from stepwise.steps.api.chat_stream import chat_chunks
from stepwise.steps.api.errors import GatewayTimeout, RunFailed
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.runs import accept_run
from stepwise.steps.executions import ExecutionStartFailed
from stepwise.steps.runs import create_run
from tests.unit.api.conftest import STATE_MACHINE_ARN, ApiWorld, api_config

ANSWER = "Paris is mild today, and 100 EUR is about 108 USD."


def expect_start(world: ApiWorld, meta: RunMeta) -> None:
    world.stubber.add_response(
        "start_execution",
        {"executionArn": f"{STATE_MACHINE_ARN}:{meta.run_id}", "startDate": datetime.now(UTC)},
        {"stateMachineArn": STATE_MACHINE_ARN, "name": meta.run_id, "input": ANY},
    )


def completion(finish_reason: str = "stop") -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-r1",
            "created": 1,
            "model": "default",
            "choices": [{"message": {"content": ANSWER}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "run_id": "r1",
            "stepwise": {"outcome": "answered", "stop_reason": "final_answer"},
        }
    )


def test_a_standard_run_is_started_then_polled_until_it_ends(world: ApiWorld) -> None:
    # Given a queued run that its execution finishes during the third wait
    meta = world.queued_run()
    expect_start(world, meta)
    store = world.services.runtime.store

    def sleep(seconds: float) -> None:
        world.time.sleep(seconds)
        if len(world.time.slept) == 3:
            store.finish_run(meta, "SUCCEEDED", stop_reason="final_answer", answer=ANSWER)

    world.services.sleep = sleep
    # When the run is awaited
    final = await_run(world.services, meta, deadline=world.time.now + 10)
    # Then its execution was started, the waits grew from the first poll interval, and the answer is read
    world.stubber.assert_no_pending_responses()
    assert world.time.slept[0] == FIRST_POLL_SECONDS
    assert world.time.slept == sorted(world.time.slept) and max(world.time.slept) <= MAX_POLL_SECONDS
    assert (final.status, final.answer) == ("SUCCEEDED", ANSWER)


def test_a_run_not_ended_by_the_deadline_is_504_naming_it(world: ApiWorld) -> None:
    # Given a queued run that never ends
    meta = world.queued_run()
    expect_start(world, meta)
    # When it is awaited for 2 seconds
    with pytest.raises(GatewayTimeout) as timed_out:
        await_run(world.services, meta, deadline=world.time.now + 2)
    # Then the wait stopped at the deadline, and the error names the run to poll
    assert sum(world.time.slept) == pytest.approx(2)
    assert timed_out.value.details == {"run_id": meta.run_id, "status": "QUEUED"}


def test_an_express_run_is_awaited_through_start_sync_execution(world: ApiWorld) -> None:
    # Given an Express workflow whose synchronous execution recorded the answer
    world.services.workflow_type = "EXPRESS"
    meta = world.queued_run()
    world.services.runtime.store.finish_run(meta, "SUCCEEDED", stop_reason="final_answer", answer=ANSWER)
    now = datetime.now(UTC)
    world.stubber.add_response(
        "start_sync_execution",
        {"executionArn": "arn", "startDate": now, "stopDate": now, "status": "SUCCEEDED"},
        {"stateMachineArn": STATE_MACHINE_ARN, "name": meta.run_id, "input": ANY},
    )
    # When the run is awaited
    final = await_run(world.services, meta, deadline=world.time.now + 10)
    # Then no polling was needed
    assert (final.answer, world.time.slept) == (ANSWER, [])


def test_an_express_execution_that_ended_without_recording_the_run_is_a_failed_run(world: ApiWorld) -> None:
    # Given an Express execution that failed before it could record anything
    world.services.workflow_type = "EXPRESS"
    meta = world.queued_run()
    now = datetime.now(UTC)
    world.stubber.add_response(
        "start_sync_execution",
        {"executionArn": "arn", "startDate": now, "stopDate": now, "status": "FAILED", "error": "States.Runtime"},
    )
    # When the run is awaited, then it is reported failed, with the run id
    with pytest.raises(RunFailed) as failed:
        await_run(world.services, meta, deadline=world.time.now + 10)
    assert failed.value.details["run_id"] == meta.run_id


def test_a_run_that_cannot_be_started_is_recorded_failed(world: ApiWorld) -> None:
    # Given Step Functions refusing to start executions
    world.stubber.add_client_error("start_execution", "ExecutionLimitExceeded", "too many")
    # When a run is posted
    with pytest.raises(ExecutionStartFailed, match="ExecutionLimitExceeded"):
        accept_run(
            world.services,
            owner="owner",
            request=RunRequest(input="hi"),
            request_body={"input": "hi"},
            idempotency_key=None,
        )
    # Then the stored run is FAILED, not left QUEUED
    [meta] = world.stored_runs()
    assert (meta.status, meta.error) == (
        "FAILED",
        RunError(type="ExecutionStartFailed", message="Step Functions ExecutionLimitExceeded: too many"),
    )


def test_a_streamed_completion_is_role_content_pieces_finish_usage_and_done() -> None:
    # When a completion is streamed with its usage
    text = completion_events(completion(), include_usage=True)
    # Then it is server-sent events: the role first, the content in pieces, the finish reason, usage, [DONE]
    events = [block.removeprefix("data: ") for block in text.split("\n\n") if block]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks if chunk["choices"])
    assert content == ANSWER
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert (chunks[-1]["choices"], chunks[-1]["usage"]["total_tokens"]) == ([], 15)


def test_a_stream_without_usage_ends_with_the_finish_reason() -> None:
    # When a completion is streamed without usage
    events = [block for block in completion_events(completion("length")).split("\n\n") if block]
    # Then the last chunk before [DONE] says why it ended, and no chunk carries usage
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["choices"][0]["finish_reason"] == "length"
    assert all("usage" not in json.loads(event.removeprefix("data: ")) for event in events[:-1])


def test_a_streamed_chat_completion_sends_the_models_reasoning_as_reasoning_content(world: ApiWorld) -> None:
    # Given a run whose model thought before it called a tool (its message stored with its reasoning)
    run = world.queued_run(owner="carol")
    message = ChatMessage(role="assistant", content="Checking.", reasoning=[ReasoningBlock(text="Paris: the tool.")])
    world.services.runtime.store.record_message(run, 1, 0, message, StepRecord(iteration=1, kind="llm"))
    start = ChatStreamStart(run_id=run.run_id, model="default", created=0, include_usage=False)
    # When the chunks are read, up to the step after the model call
    chunks = chat_chunks(world.services.runtime, owner="carol", start=start, poll_seconds=1.0, sleep=world.time.sleep)
    _, call, thought = (json.loads(frame.removeprefix(b"data: ")) for frame in islice(chunks, 3))
    # Then the reasoning step's chunk carries the thought where DeepSeek-style clients read it, never as content
    assert call["stepwise_step"]["kind"] == "llm"
    assert thought["choices"][0]["delta"] == {"reasoning_content": "Paris: the tool."}
    assert thought["stepwise_step"]["kind"] == "reasoning"


def test_a_completion_carries_the_runs_cached_and_reasoning_tokens_and_thinking_in_openais_shapes(
    world: ApiWorld,
) -> None:
    # Given a run whose model thought at two iterations, read 30 prompt tokens from its cache and wrote 8
    run = world.queued_run()
    store = world.services.runtime.store
    for iteration, thought in ((1, "The tool knows."), (2, "Now I can answer.")):
        message = ChatMessage(role="assistant", content="...", reasoning=[ReasoningBlock(text=thought)])
        store.record_message(run, iteration, 0, message, StepRecord(iteration=iteration, kind="llm"))
    usage = RunUsage(
        input_tokens=100, output_tokens=40, cache_read_tokens=30, cache_write_tokens=8, reasoning_tokens=25
    )
    final = store.finish_run(run, "SUCCEEDED", stop_reason="final_answer", answer=ANSWER, usage=usage, iteration=2)
    # When it is answered as a chat completion, and the openai SDK reads the answer
    answer = chat_completion_of(store, final, model="default", created=1).model_dump_json()
    parsed = SdkCompletion.model_validate_json(answer)
    # Then the SDK finds the counts where OpenAI puts them, and the thinking where DeepSeek and vLLM put it
    assert parsed.usage is not None and parsed.usage.prompt_tokens_details is not None
    assert parsed.usage.completion_tokens_details is not None
    assert (parsed.usage.prompt_tokens, parsed.usage.completion_tokens, parsed.usage.total_tokens) == (100, 40, 140)
    assert (
        parsed.usage.prompt_tokens_details.cached_tokens,
        parsed.usage.prompt_tokens_details.cache_write_tokens,
    ) == (
        30,
        8,
    )
    assert parsed.usage.completion_tokens_details.reasoning_tokens == 25
    answered = parsed.choices[0].message
    assert (answered.content, getattr(answered, "reasoning_content", None)) == (
        ANSWER,
        "The tool knows.\n\nNow I can answer.",
    )


def test_a_buffered_stream_sends_the_thinking_before_the_answer() -> None:
    # Given a completion whose model thought
    thought = completion()
    thought.choices[0].message.reasoning_content = "Paris first."
    # When it is streamed whole
    events = [block.removeprefix("data: ") for block in completion_events(thought).split("\n\n") if block]
    # Then the chunk after the role carries the thinking as reasoning_content, and no content holds it
    chunks = [json.loads(event) for event in events[:-1]]
    assert chunks[1]["choices"][0]["delta"] == {"reasoning_content": "Paris first."}
    content = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks if chunk["choices"])
    assert content == ANSWER


def test_a_call_of_a_legacy_function_is_answered_as_one_function_call(world: ApiWorld) -> None:
    # Given a run that offered the client's function as legacy `functions` and ended calling it
    tool = ToolSpec(name="get_weather", description="", parameters={"type": "object", "properties": {}})
    options = RunOptions(client_tools=[tool], parallel_tool_calls=False, legacy_functions=True)
    runtime = world.services.runtime
    question = [ChatMessage(role="user", content="Weather in Paris?")]
    run = create_run(runtime, messages=question, owner="owner", profile="default", options=options)
    decision = StepRecord(iteration=1, kind="parse", calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
    runtime.store.record_decision(run, decision, [])
    final = runtime.store.finish_run(run, "SUCCEEDED", stop_reason="tool_calls", iteration=1)
    # When it is answered, and the openai SDK reads the answer
    parsed = SdkCompletion.model_validate_json(
        chat_completion_of(runtime.store, final, model="default", created=1).model_dump_json()
    )
    # Then the call is the message's function_call, as OpenAI answers a request with functions
    choice = parsed.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.function_call is not None
    assert (choice.message.function_call.name, json.loads(choice.message.function_call.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert choice.message.tool_calls is None


def test_the_models_list_shows_each_profile_with_its_description() -> None:
    # Given a profile that says what it does and one that does not
    config = api_config(
        profiles={
            "researcher": {"model": "m", "description": "Finds sources and sums them up."},
            "default": {"model": "m"},
        }
    )
    # When the models are listed, and one is read alone
    listed = {card.id: card.description for card in list_models(config).data}
    alone = describe_model(config, "researcher")
    # Then each profile is a model carrying its description (none where the profile has none)
    assert listed == {"default": None, "researcher": "Finds sources and sums them up."}
    assert alone.description == "Finds sources and sums them up."


@pytest.mark.parametrize(
    ("choice", "field"),
    [
        ({"tool_choice": {"type": "function", "function": {"name": "get_wether"}}}, "tool_choice.function.name"),
        ({"function_call": {"name": "get_wether"}}, "function_call.name"),
    ],
)
def test_a_tool_choice_naming_no_tool_offered_is_refused_before_a_run_is_stored(
    world: ApiWorld, choice: dict[str, Any], field: str
) -> None:
    # Given a request offering get_weather whose tool choice names a tool nobody offers (a typo)
    tool = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    tools = {"functions": [tool]} if "function_call" in choice else {"tools": [{"type": "function", "function": tool}]}
    body = {"model": "default", "messages": [{"role": "user", "content": "Weather?"}], **tools, **choice}
    request = ChatCompletionRequest.model_validate(body)
    # When the run is queued
    with pytest.raises(InvalidRequest) as refused:
        queue_chat_run(world.services, owner="owner", request=request, request_body=body)
    # Then it is a 422 naming the field and the tool, and no run was stored
    assert refused.value.details["errors"][0]["field"] == field
    assert "get_wether" in refused.value.details["errors"][0]["reason"]
    assert world.stored_runs() == []
