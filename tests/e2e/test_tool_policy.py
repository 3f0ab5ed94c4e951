"""A profile's tool policy in Cedar, in the real state machine with the real handlers: a forbidden call never
reaches the tool's API, a permitted one does, and one a permit sends for approval waits for a person."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.steps.api.events import run_events
from tests.e2e.conftest import ConfigWriter, http_api, react_action, react_answer, scripted_model
from tests.support.emf_metrics import emitted, total
from tests.support.tool_server import Json, ScriptableToolServer

TRANSFER = {
    "toolName": "transfer",
    "description": "Send money to an account.",
    "method": "POST",
    "path": "/transfer",
    "parameter": {
        "type": "object",
        "properties": {"amount": {"type": "integer"}, "to": {"type": "string"}},
        "required": ["amount", "to"],
    },
}
CAPPED = """
@id("amounts-up-to-100")
permit(principal, action == Stepwise::Action::"call_tool", resource == Stepwise::Tool::"transfer")
when { context.arguments.amount <= 100 };

@id("no-transfer-over-100")
forbid(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount > 100 };
"""
ASKS_FROM_50 = """
@id("small")
permit(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount < 50 };

@id("ask-a-person") @approval("required")
permit(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount >= 50 };
"""


@pytest.fixture
def tool_api() -> Iterator[ScriptableToolServer]:
    """The transfer API on loopback, recording every request it gets."""
    with ScriptableToolServer() as server:
        server.on("/transfer", Json({"sent": True}))
        yield server


def transfer_config(
    write_config: ConfigWriter, api: ScriptableToolServer, amount: int, policy: str, **profile: Any
) -> Path:
    model = scripted_model(react_action("transfer", {"amount": amount, "to": "acct-1"}), react_answer("Done."))
    config_dir = write_config(model, apis=[http_api(api.url, TRANSFER)], policy="policies/payments.cedar", **profile)
    (config_dir / "policies").mkdir()
    (config_dir / "policies" / "payments.cedar").write_text(policy, encoding="utf-8")
    return config_dir


def test_a_call_the_policy_forbids_never_reaches_the_api_and_the_run_goes_on(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    tool_api: ScriptableToolServer,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Given a policy that forbids transfers over 100, and a model that asks to transfer 500
    environment, listener = local_run(transfer_config(write_config, tool_api, 500, CAPPED))
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    capfd.readouterr()
    # When the question is asked
    meta, _ = environment.ask("pay acct-1 500")
    # Then the API received nothing, the run succeeded, the refusal was counted, and the run's events name the
    # forbidding policy, and the model read that it was refused
    refused = total(emitted(capfd.readouterr().out), "ToolCallsRefusedByPolicy")
    events = run_events(environment.runtime, owner=meta.owner, run_reference=meta.run_id, after=None).events
    policy_steps = [step for step in events if step.kind == "policy"]
    observation = next(step for step in events if step.kind == "tool")
    assert (tool_api.requests, meta.status, "AwaitApproval" in listener.entered()) == ([], "SUCCEEDED", False)
    assert refused == 1
    assert [(step.tool, step.decision, step.policy and step.policy.policies) for step in policy_steps] == [
        ("transfer", "forbid", ["no-transfer-over-100"])
    ]
    assert "refused by policy `no-transfer-over-100`" in (observation.observation or "")


def test_a_call_the_policy_permits_reaches_the_api_once(
    write_config: ConfigWriter, local_run: Callable[..., Any], tool_api: ScriptableToolServer
) -> None:
    # Given the same policy, and a model that asks to transfer 50
    environment, _ = local_run(transfer_config(write_config, tool_api, 50, CAPPED))
    # When the question is asked
    meta, _ = environment.ask("pay acct-1 50")
    # Then the API received the transfer once, and the trace has no policy step
    steps = environment.runtime.store.list_steps(meta.run_id)
    assert [request.json() for request in tool_api.requests] == [{"amount": 50, "to": "acct-1"}]
    assert (meta.status, [step.kind for step in steps if step.kind == "policy"]) == ("SUCCEEDED", [])


def test_under_log_only_a_call_the_policy_forbids_runs_and_its_verdict_is_recorded(
    write_config: ConfigWriter, local_run: Callable[..., Any], tool_api: ScriptableToolServer
) -> None:
    # Given the policy forbidding transfers over 100 in log_only mode, and a model that asks to transfer 500
    config = transfer_config(write_config, tool_api, 500, CAPPED, policy_mode="log_only")
    environment, _ = local_run(config)
    # When the question is asked
    meta, _ = environment.ask("pay acct-1 500")
    # Then the API received the transfer, and the trace records what the policy would have done
    steps = environment.runtime.store.list_steps(meta.run_id)
    policy = [step.policy for step in steps if step.kind == "policy"]
    assert [request.json() for request in tool_api.requests] == [{"amount": 500, "to": "acct-1"}]
    assert [(verdict.effect, verdict.mode, verdict.policies) for verdict in policy if verdict] == [
        ("forbid", "log_only", ["no-transfer-over-100"])
    ]


def test_a_call_a_permit_annotated_approval_required_waits_for_a_person(
    write_config: ConfigWriter, local_run: Callable[..., Any], tool_api: ScriptableToolServer
) -> None:
    # Given a policy whose permit of amounts from 50 asks a person, and a model that asks to transfer 80
    environment, _ = local_run(transfer_config(write_config, tool_api, 80, ASKS_FROM_50))
    meta = environment.create_run("pay acct-1 80")
    stop = threading.Event()
    execution = threading.Thread(target=environment.execute, args=(meta.run_id,), kwargs={"stop": stop})
    # When the run executes
    execution.start()
    try:
        status = _status_within(environment, meta.run_id, "WAITING_APPROVAL", seconds=30)
    finally:
        stop.set()
        execution.join(timeout=30)
    # Then it waits for approval, the API received nothing, and the trace names the permit that asks
    steps = environment.runtime.store.list_steps(meta.run_id)
    assert (status, tool_api.requests) == ("WAITING_APPROVAL", [])
    assert [(step.decision, step.policy and step.policy.policies) for step in steps if step.kind == "policy"] == [
        ("approval", ["ask-a-person"])
    ]


def _status_within(environment: Any, run_id: str, wanted: str, *, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    status = environment.runtime.store.require_run(run_id).status
    while status != wanted and time.monotonic() < deadline:
        time.sleep(0.05)
        status = environment.runtime.store.require_run(run_id).status
    return str(status)
