"""Guardrails through the real state machine, handlers and store, with a loopback model provider and tool API."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.steps.api.events import run_events
from tests.e2e.conftest import get_tool, http_api
from tests.e2e.test_secret_canary import scan_table
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Json, ScriptableToolServer

CARD = "4111 1111 1111 1111"
CARD_DIGITS = "4111111111111111"


def test_a_card_number_a_tool_returns_reaches_neither_the_model_nor_the_answer_nor_any_stored_item(
    tmp_path: Path,
    local_run: Callable[..., Any],
    verbose_logs: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    with ScriptableToolServer() as api, FakeOpenAIServer() as provider:
        # Given a tool returning a customer's card number, under a profile redacting cards in tool results
        api.on("/customers", Json({"name": "Jo", "card": CARD, "since": "2019-04-02"}))
        provider.enqueue(body=chat_completion(tool_calls=[{"name": "customer", "arguments": {"id": "c-7"}}]))
        provider.enqueue(body=chat_completion(content="Jo pays with the card on file."))
        model = {
            "provider": "openai",
            "base_url": provider.base_url,
            "model": "gpt-fake",
            "api_key": "sk-test",
            "capabilities": {"native_tools": True},
        }
        profile = {
            "model": "m",
            "strategy": "function_calling",
            "guardrails": {"tool_results": [{"pii": ["card"], "action": "redact"}]},
        }
        config = {
            "models": {"m": model},
            "tools": {"apis": [http_api(api.url, get_tool("customer", "/customers", id="string"))]},
            "profiles": {"default": profile},
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        environment, listener = local_run(tmp_path)

        # When the run asks the tool and answers
        meta, execution = environment.ask("How does customer c-7 pay?")
        requests = [json.dumps(request.body) for request in provider.requests]
        stored_items = json.dumps(scan_table(environment.table_name))

    # Then the run succeeded after two model calls; the second saw the observation with the marker
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "Jo pays with the card on file.")
    assert len(requests) == 2
    assert "[card]" in requests[1]
    # And no digit run of the number is in any request, the stored items, the trace or the state events
    steps = environment.runtime.store.list_steps(meta.run_id)
    state_events = json.dumps([event.model_dump(mode="json") for event in listener.events])
    texts = {"requests": "".join(requests), "items": stored_items, "events": state_events, "answer": meta.answer}
    texts["trace"] = json.dumps([step.model_dump(mode="json") for step in steps])
    followed = run_events(environment.runtime, owner=meta.owner, run_reference=meta.run_id, after=None)
    texts["run events"] = followed.model_dump_json()
    captured = capfd.readouterr()
    texts |= {"log records": verbose_logs.text, "stdout": captured.out, "stderr": captured.err}
    assert "guardrail acted" in verbose_logs.text
    assert [where for where, text in texts.items() if CARD_DIGITS in re.sub(r"\D", "", text)] == []
    # And the trace has the guardrail step of the tool result: point, rule, action and count only
    assert [step.kind for step in followed.events].count("guardrail") == 1
    [guardrail] = [step for step in steps if step.kind == "guardrail"]
    assert guardrail.guardrail is not None
    assert guardrail.guardrail.point == "tool_results"
    assert [(a.rule, a.action, a.detail) for a in guardrail.guardrail.actions] == [("pii:card", "redacted", "card=1")]
