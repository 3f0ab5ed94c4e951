"""`stepwise serve`: tool calls that wait for a person's approval, over real HTTP, with the real state
machine (its wait-for-approval callback task) and an OpenAI-compatible model on loopback that records
what it was sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve
from tests.support.approval_runs import PAYMENTS, finished, poll, start, waiting
from tests.support.openai_server import FakeOpenAIServer, chat_completion, script_of_its_own

REFUNDS = '''
from stepwise.tools import tool


@tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: The order id.
    """
    return f"refunded {order}"
'''


def approval_config(base_url: str) -> dict[str, Any]:
    """`transfer` waits up to 300 s for approval, `refund` 1 s; the model is the loopback server."""
    model = {
        "provider": "openai",
        "base_url": base_url,
        "model": "gpt-fake",
        "api_key": "sk-provider",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True, "json_mode": True},
    }
    return {
        "models": {"gpt": model},
        "tools": {
            "python": [
                {"module": "payments", "requires_approval": True, "approval_timeout_seconds": 300},
                {"module": "refunds", "requiresApproval": True, "approvalTimeoutSeconds": 1},
            ]
        },
        "profiles": {"assistant": {"model": "gpt", "strategy": "function_calling"}},
        "default_profile": "assistant",
    }


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(autouse=True)
def own_script(model: FakeOpenAIServer) -> Iterator[None]:
    """Every test's replies are read by its own run, or it fails: never by the next test's."""
    with script_of_its_own(model):
        yield


def write_tools(config_dir: Path) -> Path:
    (config_dir / "payments.py").write_text(PAYMENTS, encoding="utf-8")
    (config_dir / "refunds.py").write_text(REFUNDS, encoding="utf-8")
    return config_dir / "ledger.txt"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAIServer) -> Iterator[tuple[LocalApi, Path]]:
    config_dir = tmp_path_factory.mktemp("approvals")
    ledger = write_tools(config_dir)
    # The steps run in Lambda worker processes, as `stepwise serve` runs them by default: a callback crosses processes
    with serve(approval_config(model.base_url), config_dir, lambda_workers=2) as api:
        yield api, ledger


def caller(api: LocalApi, key: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"x-api-key": key}, timeout=30)


def script(model: FakeOpenAIServer, call: dict[str, Any], answer: str | None) -> None:
    """The model asks for `call`, then answers `answer` whatever the observation (None: the run is not
    expected to ask again, so nothing is left queued for the next test)."""
    model.enqueue(body=chat_completion(tool_calls=[call]))
    if answer is not None:
        model.enqueue(body=chat_completion(content=answer))


def tool_messages(model: FakeOpenAIServer) -> list[str]:
    """The tool observations the model was sent in its latest request."""
    messages = model.requests[-1].body["messages"]
    return [str(message["content"]) for message in messages if message["role"] == "tool"]


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


def test_a_call_waits_for_approval_then_runs_once_approved(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given a run whose model asks to transfer 5 to bob, a tool that requires approval
    api, ledger = served
    client = caller(api, "approver")
    script(model, {"id": "call_pay_1", "name": "transfer", "arguments": {"amount": 5, "to": "bob"}}, "Sent.")
    run_id = start(client, "pay bob 5")
    # When the run is read while it waits
    paused = waiting(client, run_id)
    # Then it is WAITING_APPROVAL with the call and its arguments, and nothing was transferred yet
    assert paused["status"] == "WAITING_APPROVAL"
    assert [(each["call_id"], each["tool"], each["arguments"]) for each in paused["pending_approvals"]] == [
        ("call_pay_1", "transfer", {"amount": 5, "to": "bob"})
    ]
    assert "5 bob" not in ledger_lines(ledger)
    # When the owner approves it
    answered = client.post(f"/v1/runs/{run_id}/approvals/call_pay_1", json={"approved": True, "reason": "ok"})
    # Then the run goes on, the tool ran once, and the run succeeded with the model's answer
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] != "WAITING_APPROVAL"
    done = finished(client, run_id)
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Sent.")
    assert ledger_lines(ledger).count("5 bob") == 1
    assert tool_messages(model) == ["sent 5 to bob"]


def test_a_denied_call_is_not_run_and_the_model_reads_the_reason(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given a run waiting for approval of a transfer of 7 to eve
    api, ledger = served
    client = caller(api, "denier")
    script(model, {"id": "call_pay_2", "name": "transfer", "arguments": {"amount": 7, "to": "eve"}}, "Not sent.")
    run_id = start(client, "pay eve 7")
    assert waiting(client, run_id)["status"] == "WAITING_APPROVAL"
    # When the owner denies it with a reason
    answered = client.post(
        f"/v1/runs/{run_id}/approvals/call_pay_2", json={"approved": False, "reason": "eve is not a customer"}
    )
    # Then the tool never ran, the model was told it was denied and why, and it answered
    assert answered.status_code == 200, answered.text
    done = finished(client, run_id)
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Not sent.")
    assert "7 eve" not in ledger_lines(ledger)
    [observation] = tool_messages(model)
    assert "denied" in observation and "eve is not a customer" in observation


def test_two_calls_of_one_reply_wait_together_and_each_answer_decides_its_own_call(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given a run whose model asks, in one reply, to transfer 3 to ann and 4 to max
    api, ledger = served
    client = caller(api, "two-calls")
    calls = [
        {"id": "call_pay_ann", "name": "transfer", "arguments": {"amount": 3, "to": "ann"}},
        {"id": "call_pay_max", "name": "transfer", "arguments": {"amount": 4, "to": "max"}},
    ]
    model.enqueue(body=chat_completion(tool_calls=calls))
    model.enqueue(body=chat_completion(content="Paid ann only."))
    run_id = start(client, "pay ann 3 and max 4")
    # When the run is read once both wait
    paused = poll(client, run_id, lambda run: len(run.get("pending_approvals") or []) == 2)
    # Then both calls are pending with their own arguments
    assert {each["call_id"]: each["arguments"]["to"] for each in paused["pending_approvals"]} == {
        "call_pay_ann": "ann",
        "call_pay_max": "max",
    }
    # When the second is denied, and then the first approved
    denied = client.post(f"/v1/runs/{run_id}/approvals/call_pay_max", json={"approved": False, "reason": "no"})
    still_waiting = client.get(f"/v1/runs/{run_id}").json()
    approved = client.post(f"/v1/runs/{run_id}/approvals/call_pay_ann", json={"approved": True})
    # Then the run waited for both answers, only the approved transfer ran, and the model read both outcomes
    assert (denied.status_code, approved.status_code) == (200, 200)
    assert [each["call_id"] for each in still_waiting["pending_approvals"]] == ["call_pay_ann"]
    done = finished(client, run_id)
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Paid ann only.")
    assert "3 ann" in ledger_lines(ledger) and "4 max" not in ledger_lines(ledger)
    sent, refused = tool_messages(model)
    assert sent == "sent 3 to ann" and "denied" in refused


def test_an_unanswered_call_is_denied_when_its_wait_times_out(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given a run whose model asks for a refund, whose approval waits 1 s
    api, _ = served
    client = caller(api, "nobody-answers")
    script(model, {"id": "call_refund_1", "name": "refund", "arguments": {"order": "A-1"}}, "Could not refund.")
    run_id = start(client, "refund A-1")
    # When nobody answers
    done = finished(client, run_id)
    # Then the run went on without the refund: the model read that nobody approved it in time
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Could not refund.")
    [observation] = tool_messages(model)
    assert "nobody approved it within 1 seconds" in observation
    # And a late answer is refused: the run has ended
    late = client.post(f"/v1/runs/{run_id}/approvals/call_refund_1", json={"approved": True})
    assert (late.status_code, late.json()["error"]["type"]) == (409, "run_ended")


def test_only_the_owner_sees_and_answers_a_waiting_call(served: tuple[LocalApi, Path], model: FakeOpenAIServer) -> None:
    # Given a run of one caller waiting for approval
    api, ledger = served
    owner, stranger = caller(api, "owner-a"), caller(api, "stranger-b")
    script(model, {"id": "call_pay_3", "name": "transfer", "arguments": {"amount": 9, "to": "mallory"}}, "Done.")
    run_id = start(owner, "pay mallory 9")
    assert waiting(owner, run_id)["status"] == "WAITING_APPROVAL"
    # When another caller tries to approve it
    refused = stranger.post(f"/v1/runs/{run_id}/approvals/call_pay_3", json={"approved": True})
    # Then it is 404, as for a run that does not exist, and the call still waits untouched
    assert refused.status_code == 404
    assert waiting(owner, run_id)["status"] == "WAITING_APPROVAL"
    assert "9 mallory" not in ledger_lines(ledger)
    owner.post(f"/v1/runs/{run_id}/approvals/call_pay_3", json={"approved": False})
    assert finished(owner, run_id)["status"] == "SUCCEEDED"


def test_a_call_answered_twice_or_unknown_is_refused(served: tuple[LocalApi, Path], model: FakeOpenAIServer) -> None:
    # Given a waiting call
    api, _ = served
    client = caller(api, "twice")
    script(model, {"id": "call_pay_4", "name": "transfer", "arguments": {"amount": 1, "to": "carol"}}, "Done.")
    run_id = start(client, "pay carol 1")
    assert waiting(client, run_id)["status"] == "WAITING_APPROVAL"
    # When a call the run never made is answered, then the call is answered twice
    unknown = client.post(f"/v1/runs/{run_id}/approvals/call_nope", json={"approved": True})
    first = client.post(f"/v1/runs/{run_id}/approvals/call_pay_4", json={"approved": True})
    second = client.post(f"/v1/runs/{run_id}/approvals/call_pay_4", json={"approved": False})
    # Then the unknown call is 404, the first answer stands and the second is 409 (the run may have ended)
    assert unknown.status_code == 404
    assert first.status_code == 200
    assert second.status_code == 409
    assert second.json()["error"]["type"] in ("approval_not_pending", "run_ended")
    assert finished(client, run_id)["status"] == "SUCCEEDED"


def test_a_body_that_is_not_an_answer_is_refused_naming_the_field(served: tuple[LocalApi, Path]) -> None:
    # Given any run id; When the body's `approved` is not a boolean
    api, _ = served
    response = caller(api, "sloppy").post("/v1/runs/some-run/approvals/call_1", json={"approved": "yes"})
    # Then it is 422 naming `approved`
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["field"] == "approved"


def test_a_waiting_run_can_be_cancelled_and_its_call_then_refused(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given a run waiting for approval
    api, ledger = served
    client = caller(api, "canceller")
    script(model, {"id": "call_pay_5", "name": "transfer", "arguments": {"amount": 3, "to": "dan"}}, None)
    run_id = start(client, "pay dan 3")
    assert waiting(client, run_id)["status"] == "WAITING_APPROVAL"
    # When the owner cancels it, then tries to approve the call
    cancelled = client.post(f"/v1/runs/{run_id}/cancel")
    late = client.post(f"/v1/runs/{run_id}/approvals/call_pay_5", json={"approved": True})
    # Then the run is CANCELLED, the approval is refused with 409, and the tool never ran
    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "CANCELLED")
    assert (late.status_code, late.json()["error"]["type"]) == (409, "run_ended")
    assert "3 dan" not in ledger_lines(ledger)


def test_a_run_waiting_when_serve_stops_is_still_approvable_after_a_restart(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer, dynamodb_local: str, unique_table_name: str
) -> None:
    # Given `stepwise serve` on a lasting store (the tool modules of the other tests, already imported),
    # with a run waiting for approval of a transfer
    ledger = served[1]
    config_dir = ledger.parent
    config = approval_config(model.base_url)
    store = {"dynamodb_endpoint_url": dynamodb_local, "table_name": unique_table_name}
    script(model, {"id": "call_pay_9", "name": "transfer", "arguments": {"amount": 4, "to": "zoe"}}, "Sent.")
    with serve(config, config_dir, **store) as first:
        run_id = start(caller(first, "restarter"), "pay zoe 4")
        assert waiting(caller(first, "restarter"), run_id)["status"] == "WAITING_APPROVAL"
    # (still waiting once serve has stopped: a failure says whether the stop or the resumption ended the run)
    stopped = first.environment.runtime.store.require_run(run_id)
    assert stopped.status == "WAITING_APPROVAL", f"the stop left the run {stopped.status}: {stopped.error}"
    # When serve starts again on the same store (it resumes the open runs) and the owner approves
    with serve(config, config_dir, **store) as second:
        client = caller(second, "restarter")
        resumed = waiting(client, run_id)
        answered = client.post(f"/v1/runs/{run_id}/approvals/call_pay_9", json={"approved": True})
        done = finished(client, run_id)
    # Then the call was still waiting, with its arguments, the approval reached the resumed execution,
    # the tool ran once and the run succeeded
    assert [each["call_id"] for each in resumed["pending_approvals"]] == ["call_pay_9"]
    assert answered.status_code == 200, answered.text
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Sent.")
    assert ledger_lines(ledger).count("4 zoe") == 1


def test_an_express_workflow_denies_a_call_that_needs_approval_and_says_why(
    served: tuple[LocalApi, Path], model: FakeOpenAIServer
) -> None:
    # Given `stepwise serve` with the Express workflow, which cannot wait for a callback
    ledger = served[1]
    config_dir = ledger.parent
    script(model, {"id": "call_pay_x", "name": "transfer", "arguments": {"amount": 2, "to": "ann"}}, "Not sent.")
    with serve(approval_config(model.base_url), config_dir, workflow_type="EXPRESS") as express:
        client = caller(express, "express")
        # When a run calls a tool that needs approval
        done = finished(client, start(client, "pay ann 2"))
    # Then the call was denied without waiting, the model read why, and the tool never ran
    assert (done["status"], done["answer"]) == ("SUCCEEDED", "Not sent.")
    [observation] = tool_messages(model)
    assert "Express workflow cannot wait" in observation
    assert "2 ann" not in ledger_lines(ledger)
