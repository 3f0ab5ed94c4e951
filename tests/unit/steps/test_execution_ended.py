"""ExecutionEnded on a moto table: an execution that ended without recording its run records it, once.

The events are shaped as the Step Functions guide's "EventBridge for execution status changes" page shows
them (events/execution_ended.json is the FAILED one).
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.errors import InvalidStateEvent
from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.step_record import StepRecord
from stepwise.steps.agent import StoredRun
from stepwise.steps.execution_ended import handle
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.store.approvals import APPROVAL_PREFIX
from stepwise.store.keys import ASSISTANT_SLOT, WAITING_INDEX
from tests.conftest import PROJECT_ROOT

FAILED_EVENT = json.loads((PROJECT_ROOT / "events" / "execution_ended.json").read_text(encoding="utf-8"))


@pytest.fixture
def runtime(dynamodb_table: tuple[Any, str], tmp_path: Path) -> StepRuntime:
    config = StepwiseConfig.from_mapping(
        {
            "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "unused"}]}]}},
            "profiles": {"default": {"model": "m"}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    return StepRuntime(config=config, config_dir=tmp_path, store=ConversationStore(client, table_name))


def open_run(runtime: StepRuntime) -> str:
    meta = create_run(runtime, messages=[ChatMessage(role="user", content="q")], owner="alice", profile="default")
    return meta.run_id


def status_change(run_id: str, status: str, **detail: Any) -> dict[str, Any]:
    """The FAILED sample event, for another run and status (the execution is named by its run)."""
    base = FAILED_EVENT["detail"] | {"name": run_id, "status": status, "input": json.dumps({"run_id": run_id})}
    return FAILED_EVENT | {"detail": {key: value for key, value in (base | detail).items() if value is not None}}


def requests_made(runtime: StepRuntime, dynamodb_table: tuple[Any, str]) -> list[str]:
    """The DynamoDB operations the store sends from now on, in order."""
    client, _ = dynamodb_table
    operations: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: operations.append(model.name))
    return operations


def test_a_run_its_failed_execution_left_open_is_recorded_failed_with_the_execution_error(
    runtime: StepRuntime,
) -> None:
    # Given a run still open whose execution ended FAILED
    run_id = open_run(runtime)
    # When the status change arrives
    result = handle(status_change(run_id, "FAILED"), runtime)
    # Then the run is FAILED with the error and message the execution ended with
    meta = runtime.store.require_run(run_id)
    assert result == {"run_id": run_id, "status": "FAILED", "recorded": True}
    assert meta.error is not None and meta.error.type == "StoreTransientError"
    assert meta.error.message.startswith("DynamoDB did not answer")


def test_a_run_whose_trace_holds_counts_no_provider_could_send_is_still_recorded_failed(runtime: StepRuntime) -> None:
    # Given an open run whose model step an earlier version stored unchecked: -5 output tokens, more cached
    # tokens than input tokens
    run_id = open_run(runtime)
    meta = runtime.store.require_run(run_id)
    step = StepRecord.model_construct(
        iteration=1, kind="llm", latency_ms=5.0, input_tokens=10, output_tokens=-5, cache_read_tokens=50
    )
    reply = ChatMessage(role="assistant", content="Sunny.")
    runtime.store.record_message(StoredRun(run_id, meta.expires_at), 1, ASSISTANT_SLOT, reply, step)
    # When its execution's FAILED status change arrives
    result = handle(status_change(run_id, "FAILED"), runtime)
    # Then the run is recorded FAILED, its usage read in range
    final = runtime.store.require_run(run_id)
    assert result["recorded"] is True and final.status == "FAILED"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cache_read_tokens) == (10, 0, 10)


def test_a_run_whose_execution_timed_out_is_recorded_timed_out(runtime: StepRuntime) -> None:
    # Given a run still open whose execution ran past the state machine's TimeoutSeconds
    run_id = open_run(runtime)
    # When the TIMED_OUT status change arrives (it carries no error of its own)
    handle(status_change(run_id, "TIMED_OUT", error=None, cause=None), runtime)
    # Then the run is TIMED_OUT, and says the execution ended before its run was recorded
    meta = runtime.store.require_run(run_id)
    assert meta.status == "TIMED_OUT"
    assert meta.error is not None and meta.error.type == "States.Timeout"
    assert "before its run was recorded" in meta.error.message


def test_a_run_whose_execution_was_stopped_outside_the_api_is_cancelled_by_stop_execution(
    runtime: StepRuntime,
) -> None:
    # Given a run still open whose execution someone stopped from the console
    run_id = open_run(runtime)
    # When the ABORTED status change arrives
    handle(status_change(run_id, "ABORTED", error=None, cause=None), runtime)
    # Then the run is CANCELLED, by StopExecution
    meta = runtime.store.require_run(run_id)
    assert (meta.status, meta.cancelled_by) == ("CANCELLED", "StopExecution")


def test_a_run_that_already_has_its_outcome_is_left_as_it_is_after_one_read(
    runtime: StepRuntime, dynamodb_table: tuple[Any, str]
) -> None:
    # Given a run FormatFailure already recorded, as before every Fail state
    run_id = open_run(runtime)
    handle(status_change(run_id, "FAILED", error="LLMPermanentError", cause="first"), runtime)
    operations = requests_made(runtime, dynamodb_table)
    # When another status change for it arrives (EventBridge delivers at least once)
    result = handle(status_change(run_id, "ABORTED", error=None, cause=None), runtime)
    # Then nothing changes and the only request was the read of its META
    meta = runtime.store.require_run(run_id)
    assert result == {"run_id": run_id, "status": "FAILED", "recorded": False}
    assert (meta.status, meta.error.type if meta.error else None) == ("FAILED", "LLMPermanentError")
    assert operations[:1] == ["GetItem"] and operations.count("UpdateItem") == 0


def test_an_execution_of_no_stored_run_changes_nothing(runtime: StepRuntime) -> None:
    # Given no run stored under the execution's name
    # When its status change arrives
    result = handle(status_change("f" * 32, "FAILED"), runtime)
    # Then nothing is recorded
    assert result == {"run_id": "f" * 32, "status": None, "recorded": False}
    assert runtime.store.get_run("f" * 32) is None


def test_an_event_that_is_not_an_execution_status_change_is_refused_naming_the_field(runtime: StepRuntime) -> None:
    # Given an EventBridge event of another kind
    event = FAILED_EVENT | {"detail-type": "Scheduled Event"}
    # When it is handled / Then it is refused, naming detail-type
    with pytest.raises(InvalidStateEvent, match="detail-type"):
        handle(event, runtime)


GUIDE_EVENTS = json.loads(
    (PROJECT_ROOT / "tests" / "fixtures" / "stepfunctions" / "execution-status-change-events.json").read_text(
        encoding="utf-8"
    )
)


@pytest.mark.parametrize(
    ("status", "recorded"), [("FAILED", "FAILED"), ("TIMED_OUT", "TIMED_OUT"), ("ABORTED", "CANCELLED")]
)
def test_the_developer_guides_own_events_record_the_run_the_execution_is_named_for(
    runtime: StepRuntime, status: str, recorded: str
) -> None:
    # Given a run stored under the name of the guide's execution, still open
    create_run(
        runtime,
        messages=[ChatMessage(role="user", content="q")],
        owner="alice",
        profile="default",
        run_id="execution-name",
    )
    # When the guide's event for that status arrives (no error, no cause, an input that names no run)
    result = handle(GUIDE_EVENTS[status], runtime)
    # Then the run is found by the execution's name and recorded
    assert result == {"run_id": "execution-name", "status": recorded, "recorded": True}


@pytest.mark.parametrize("status", ["RUNNING", "SUCCEEDED"])
def test_the_developer_guides_other_events_are_refused_naming_the_status(runtime: StepRuntime, status: str) -> None:
    # When an event the template's rule never sends arrives / Then it is refused, naming detail.status
    with pytest.raises(InvalidStateEvent, match=r"detail\.status"):
        handle(GUIDE_EVENTS[status], runtime)


def wait_for_approval(runtime: StepRuntime, run_id: str, index: int) -> None:
    """Call `index` of the run's first iteration waits for alice's approval, as ToolInvoke's wait stores it."""
    meta = runtime.store.begin_iteration(run_id, 1)
    approval = runtime.store.approvals.request(
        run_id,
        1,
        index,
        ToolCall(id=f"call_1_{index}", name="launch", arguments={"target": "prod"}),
        owner="alice",
        token=f"token-{run_id}-{index}",
        now=1000.0,
        timeout_at=1000.0 + 3600,
        expires_at=meta.expires_at,
    )
    runtime.store.approvals.mark_waiting(approval)


def indexed_runs(dynamodb_table: tuple[Any, str], owner: str) -> list[str]:
    """The run of each entry the waiting-approvals index holds for `owner`."""
    client, table_name = dynamodb_table
    response = client.query(
        TableName=table_name,
        IndexName=WAITING_INDEX,
        KeyConditionExpression="waiting_owner = :owner",
        ExpressionAttributeValues={":owner": {"S": owner}},
    )
    return [item["run_id"]["S"] for item in response["Items"]]


@pytest.mark.parametrize("status", ["TIMED_OUT", "FAILED"])
def test_a_run_that_ended_while_its_calls_waited_takes_them_out_of_the_owners_index(
    runtime: StepRuntime, dynamodb_table: tuple[Any, str], status: str
) -> None:
    # Given a run whose two calls wait for alice's approval, and another run of hers whose call waits too
    run_id, other = open_run(runtime), open_run(runtime)
    wait_for_approval(runtime, run_id, 0)
    wait_for_approval(runtime, run_id, 1)
    wait_for_approval(runtime, other, 0)
    # When the first run's execution ends without recording it, and the event is delivered twice
    first = handle(status_change(run_id, status, error=None, cause=None), runtime)
    again = handle(status_change(run_id, status, error=None, cause=None), runtime)
    # Then the run is recorded once, the index holds only the other run's call, and the ended run's calls
    # stay pending on it (nothing answered them)
    assert (first["status"], first["recorded"], again["recorded"]) == (status, True, False)
    assert indexed_runs(dynamodb_table, "alice") == [other]
    assert [approval.status for approval in runtime.store.approvals.list(run_id)] == ["pending", "pending"]


def test_a_run_that_was_not_waiting_ends_without_reading_its_approvals(
    runtime: StepRuntime, dynamodb_table: tuple[Any, str]
) -> None:
    # Given an open run with no call waiting for approval
    run_id = open_run(runtime)
    client, _ = dynamodb_table
    queried: list[str] = []
    client.meta.events.register(
        "before-parameter-build.dynamodb.Query",
        lambda params, **_: queried.extend(value["S"] for value in params["ExpressionAttributeValues"].values()),
    )
    # When its execution's TIMED_OUT status change arrives
    handle(status_change(run_id, "TIMED_OUT", error=None, cause=None), runtime)
    # Then the run is recorded after reading its partition, and no Query read its approvals
    assert runtime.store.require_run(run_id).status == "TIMED_OUT"
    assert queried and not [value for value in queried if value.startswith(APPROVAL_PREFIX)]


def logs_delivery(*records: dict[str, Any]) -> dict[str, Any]:
    """CloudWatch Logs' delivery to a subscribed function: the state machine's log records, gzipped and base64."""
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": "/aws/vendedlogs/states/stepwise-agent",
        "logEvents": [
            {"id": str(index), "timestamp": 1700000000000 + index, "message": json.dumps(record)}
            for index, record in enumerate(records)
        ],
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def express_record(run_id: str, event_type: str, **details: str) -> dict[str, Any]:
    """One record of an Express state machine's log (level ERROR, no execution data)."""
    arn = f"arn:aws:states:eu-west-1:123456789012:express:stepwise-agent:{run_id}:6f1c2a8e-0d1b-4c5e-9f3a-2b7d8e9f0a1c"
    return {
        "id": "42",
        "type": event_type,
        "details": details,
        "previous_event_id": "41",
        "event_timestamp": "1700000000000",
        "execution_arn": arn,
    }


def test_an_express_execution_stopped_at_its_limit_is_recorded_timed_out_from_the_log(runtime: StepRuntime) -> None:
    # Given an open run whose Express execution the 5-minute limit ended (Express sends no status-change event)
    run_id = open_run(runtime)
    delivery = logs_delivery(express_record(run_id, "ExecutionTimedOut", error="States.Timeout"))
    # When the state machine's log record reaches ExecutionEnded through the subscription
    result = handle(delivery, runtime)
    # Then the run is recorded TIMED_OUT, once
    assert result == {"ended": [{"run_id": run_id, "status": "TIMED_OUT", "recorded": True}]}
    assert runtime.store.require_run(run_id).status == "TIMED_OUT"


def test_log_records_that_end_no_execution_are_skipped(runtime: StepRuntime) -> None:
    # Given a delivery holding a failed task (the execution went on) and a line that is no history event
    run_id = open_run(runtime)
    delivery = logs_delivery(express_record(run_id, "TaskFailed", error="Lambda.Unknown"), {"note": "other"})
    # When it reaches ExecutionEnded / Then nothing is recorded and the run is still open
    assert handle(delivery, runtime) == {"ended": []}
    assert not runtime.store.require_run(run_id).is_terminal


def test_a_delivery_that_cannot_be_decoded_is_refused_naming_the_field(runtime: StepRuntime) -> None:
    # Given a delivery whose data is not base64 of gzip / When it arrives / Then it is refused naming awslogs.data
    with pytest.raises(InvalidStateEvent, match=r"awslogs\.data"):
        handle({"awslogs": {"data": "not base64!"}}, runtime)
