"""The chat completions facade: waiting for a run, the completion it answers with, and the SSE stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import islice

import pytest
from botocore.stub import ANY

from stepwise.models.api_requests import RunRequest
from stepwise.models.chat_api import ChatCompletion, ChatStreamStart
from stepwise.models.messages import ChatMessage, ReasoningBlock
from stepwise.models.run import RunError, RunMeta, StepRecord
from stepwise.steps.api.chat import FIRST_POLL_SECONDS, MAX_POLL_SECONDS, await_run, completion_events
from stepwise.steps.api.chat_stream import chat_chunks
from stepwise.steps.api.errors import GatewayTimeout, RunFailed
from stepwise.steps.api.runs import accept_run
from stepwise.steps.executions import ExecutionStartFailed
from tests.unit.api.conftest import STATE_MACHINE_ARN, ApiWorld

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
