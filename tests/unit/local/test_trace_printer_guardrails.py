"""`stepwise run`'s live trace shows the model's text through the output `pii` rules of the run's profile,
as the API's run views do, and a call's arguments as the tool received them."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stepwise.local.asl import StateEvent
from stepwise.local.trace_printer import LiveTracePrinter
from stepwise.models.messages import ChatMessage, ReasoningBlock
from stepwise.models.step_record import StepRecord
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from tests.unit.api.conftest import api_config


def exited(state: str, run_id: str) -> StateEvent:
    """The engine's event for `state` of iteration 1 having finished."""
    payload = {"run_id": run_id, "iteration": 1}
    return StateEvent(type="exited", state=state, timestamp=datetime.now(UTC), input=payload, output=payload)


def test_the_printed_trace_shows_the_models_text_redacted_and_a_calls_arguments_as_sent(
    dynamodb_table: tuple[Any, str],
) -> None:
    # Given a profile whose output rule redacts email addresses, and a run whose model wrote one in its
    # thinking, its thought and a call's arguments (stored as written)
    client, table = dynamodb_table
    guardrails = {"output": [{"pii": ["email"], "action": "redact"}]}
    config = api_config(profiles={"default": {"model": "m", "guardrails": guardrails}})
    runtime = StepRuntime(config=config, config_dir=Path("."), store=ConversationStore(client, table))
    run = create_run(runtime, messages=[ChatMessage(role="user", content="hi")], owner="o", profile="default")
    thinking = ReasoningBlock(text="Mail jo@example.com about it.")
    message = ChatMessage(role="assistant", content="I will mail jo@example.com.", reasoning=[thinking])
    runtime.store.record_message(run, 1, 0, message, StepRecord(iteration=1, kind="llm"))
    call = {"id": "call_1", "name": "notify", "arguments": {"to": "jo@example.com"}}
    decision = StepRecord(
        iteration=1, kind="parse", decision="tool_calls", thought="I will mail jo@example.com.", calls=[call]
    )
    runtime.store.record_decision(run, decision, [])
    out = io.StringIO()
    printer = LiveTracePrinter(lambda: runtime, out)
    # When the printer sees the model call and the decision finish
    printer(exited("LLMCall", run.run_id))
    printer(exited("Parse", run.run_id))
    # Then the thinking and the thought show the marker; the call's arguments are what the tool received
    lines = out.getvalue().splitlines()
    assert "[1] reasoning Mail [email] about it." in lines
    assert "[1] thought   I will mail [email]." in lines
    action = next(line for line in lines if line.startswith("[1] action"))
    assert "jo@example.com" in action
    assert sum("jo@example.com" in line for line in lines) == 1
