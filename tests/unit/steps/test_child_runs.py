"""The wait for a child run (AwaitChildRun, a mode of ToolInvoke's function) on a moto table and moto's Step
Functions: a retried or resumed wait finds the child it started, and a child that ended first settles it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ChildRunSettled
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunMeta, RunUsage
from stepwise.models.state import ChildWaitEvent, StatePayload, ToolInvokeEvent
from stepwise.steps.child_runs import await_child_run
from stepwise.steps.delegation import child_run_id
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.tool_invoke import handle, tool_invoke
from stepwise.store import ConversationStore
from stepwise.telemetry.otel_spans import OtelSpans
from tests.support.delegation import delegating_config


@pytest.fixture
def machine(dynamodb_table: tuple[Any, str]) -> tuple[Any, str]:
    """moto's Step Functions (inside the table's mock) with one state machine: the client and its ARN."""
    client = boto3.client("stepfunctions", region_name="us-east-1")
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    created = client.create_state_machine(
        name="agent", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
    )
    return client, str(created["stateMachineArn"])


@pytest.fixture
def runtime(dynamodb_table: tuple[Any, str], machine: tuple[Any, str], tmp_path: Path) -> StepRuntime:
    client, table_name = dynamodb_table
    config = StepwiseConfig.from_mapping(delegating_config(), environ={})
    return StepRuntime(
        config=config,
        config_dir=tmp_path,
        store=ConversationStore(client, table_name),
        executions=lambda: StepFunctionsExecutions(machine[0], machine[1]),
    )


def decided_parent(runtime: StepRuntime) -> tuple[RunMeta, StatePayload]:
    """A `lead` run whose first decision calls the researcher: its META, and the payload Parse returned."""
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="Go")], owner="alice", profile="lead")
    payload = llm_call(iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime), runtime)
    return meta, parse(payload, runtime)


def waiting_parent(runtime: StepRuntime) -> tuple[RunMeta, dict[str, Any]]:
    """A `lead` run whose first decision calls the researcher: its META, and its call's Map item."""
    meta, decided = decided_parent(runtime)
    return meta, {"run_id": meta.run_id, "iteration": 1, "index": 0, "call": decided.calls[0].model_dump()}


def wait_event(item: dict[str, Any], machine_arn: str, token: str) -> ChildWaitEvent:
    execution = machine_arn.replace(":stateMachine:", ":execution:") + ":" + item["run_id"]
    return ChildWaitEvent.model_validate(item | {"task_token": token, "execution": execution})


def test_a_retried_wait_finds_the_child_it_started_and_starts_it_once(
    runtime: StepRuntime, machine: tuple[Any, str]
) -> None:
    # Given a parent whose model called its researcher agent
    parent, item = waiting_parent(runtime)
    # When the wait for the child runs, then runs again (a retry, or a resumed iteration) under a new token
    await_child_run(wait_event(item, machine[1], "token-1"), runtime)
    answer = await_child_run(wait_event(item, machine[1], "token-2"), runtime)
    # Then one child run exists, with one execution, waited for under the latest token
    child_id = child_run_id(parent.run_id, item["call"]["call_id"])
    child = runtime.store.require_run(child_id)
    executions = machine[0].list_executions(stateMachineArn=machine[1])["executions"]
    assert answer["child_run_id"] == child_id
    assert [execution["name"] for execution in executions] == [child_id]
    assert (child.parent_run_id, child.parent_call_id, child.depth, child.owner) == (
        parent.run_id,
        item["call"]["call_id"],
        2,
        "alice",
    )
    assert child.parent_task_token == "token-2"
    assert child.deadline < parent.deadline
    assert [link.run_id for link in runtime.store.child_runs.children(parent.run_id)] == [child_id]


def test_a_child_that_ended_before_its_parent_waited_settles_the_wait(
    runtime: StepRuntime, machine: tuple[Any, str]
) -> None:
    # Given a parent's child run that ended before the parent's wait stored its token
    parent, item = waiting_parent(runtime)
    await_child_run(wait_event(item, machine[1], "token-1"), runtime)
    child = runtime.store.require_run(child_run_id(parent.run_id, item["call"]["call_id"]))
    runtime.store.finish_run(child, "SUCCEEDED", stop_reason="final_answer", outcome="answered", answer="330 m")
    # When the wait begins again
    # Then it does not wait: the state machine catches ChildRunSettled into InvokeTool, which reads the answer
    with pytest.raises(ChildRunSettled, match="already ended SUCCEEDED"):
        await_child_run(wait_event(item, machine[1], "token-2"), runtime)


def test_a_child_run_joins_its_parents_trace(
    dynamodb_table: tuple[Any, str], machine: tuple[Any, str], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    # Given a parent run traced with OpenTelemetry, whose model called its researcher agent
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client, table_name = dynamodb_table
    runtime = StepRuntime(
        config=StepwiseConfig.from_mapping(delegating_config(), environ={}),
        config_dir=tmp_path,
        store=ConversationStore(client, table_name),
        spans=OtelSpans(provider),
        executions=lambda: StepFunctionsExecutions(machine[0], machine[1]),
    )
    parent, item = waiting_parent(runtime)
    assert parent.trace is not None
    # When the wait for the child runs as the Lambda entry runs it (in the step's span, under the run's trace)
    event = wait_event(item, machine[1], "token-1").model_dump() | {"trace": parent.trace.model_dump()}
    handle(event, runtime)
    # Then the child's run span is in the parent's trace: one trace for the tree
    child = runtime.store.require_run(child_run_id(parent.run_id, item["call"]["call_id"]))
    assert child.trace is not None
    assert child.trace.traceparent.split("-")[1] == parent.trace.traceparent.split("-")[1]
    assert child.trace.traceparent != parent.trace.traceparent


def test_what_a_child_spent_is_the_calls_observation_and_counts_against_the_parents_budget(
    runtime: StepRuntime, machine: tuple[Any, str]
) -> None:
    # Given a parent whose child run answered, having spent 150 tokens
    parent, decided = decided_parent(runtime)
    item: dict[str, Any] = {"run_id": parent.run_id, "iteration": 1, "index": 0, "call": decided.calls[0].model_dump()}
    await_child_run(wait_event(item, machine[1], "token-1"), runtime)
    child = runtime.store.require_run(child_run_id(parent.run_id, decided.calls[0].call_id))
    usage = RunUsage(input_tokens=100, output_tokens=50, llm_calls=1, cost_usd=0.25)
    runtime.store.finish_run(
        child, "SUCCEEDED", stop_reason="final_answer", outcome="answered", answer="330 m", usage=usage
    )
    # When the call's observation is written (the child's end answered the wait) and the next iteration begins
    tool_invoke(ToolInvokeEvent.model_validate(item | {"child": {"child_run_id": child.run_id}}), runtime)
    guarded = iteration_guard(decided, runtime)
    # Then the observation is the child's answer, and the parent's spend carries the child's tokens and cost
    assert runtime.store.list_messages(parent.run_id)[-1].content == "330 m"
    assert guarded.run is not None and decided.run is not None
    assert (guarded.run.spend.delegated_tokens, guarded.run.spend.delegated_cost_usd) == (150, 0.25)
    assert guarded.run.spend.input_tokens == decided.run.spend.input_tokens
