"""A run whose model calls a remote A2A agent served by the official `a2a-sdk` server on loopback.

The real statemachine/agent.asl.json runs in the local engine with the real handlers; the agent is the SDK's
own server plumbing (AgentExecutor, DefaultRequestHandler, its Starlette routes) behind uvicorn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from stepwise.tools.idempotency import idempotency_key
from tests.e2e.conftest import scripted_model
from tests.support.a2a_agent import Reply, ScriptedA2aAgent

QUESTION = "Will it rain in Paris tomorrow?"
REPLY = "Light rain in Paris tomorrow from 14:00, 12 °C."


def test_a_profile_calls_an_a2a_agent_and_answers_with_its_reply(tmp_path: Path, local_run: Callable[..., Any]) -> None:
    agent = ScriptedA2aAgent({QUESTION: Reply(REPLY)})
    with agent.serving() as url:
        # Given a profile whose tools include the agent, and a model that asks it, then answers with its reply
        call = {"name": "weather", "arguments": {"message": QUESTION}}
        model = scripted_model(
            {"tool_calls": [call]}, {"content": f"The weather agent says: {REPLY}"}, native_tools=True
        )
        tools = {"a2a": [{"url": url, "name": "weather", "internal": True, "timeoutSeconds": 20}]}
        profiles = {"default": {"model": "m", "strategy": "function_calling", "tools": ["weather"]}}
        config = {"models": {"m": model}, "tools": tools, "profiles": profiles}
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        environment, listener = local_run(tmp_path)

        # When the question is asked
        meta, execution = environment.ask("Should I take an umbrella in Paris tomorrow?")

    # Then the agent received the model's message once, its id the call's idempotency key
    assert [(each.text, each.message_id) for each in agent.received] == [
        (QUESTION, idempotency_key(meta.run_id, 1, "call_0_0"))
    ]
    # And its reply is the call's observation, and the run's answer uses it
    observations = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert [(m.name, m.content) for m in observations] == [("weather", REPLY)]
    assert listener.entered().count("InvokeTool") == 1
    assert (execution.status, meta.status, meta.answer) == (
        "SUCCEEDED",
        "SUCCEEDED",
        f"The weather agent says: {REPLY}",
    )
    assert (meta.usage.llm_calls, meta.usage.tool_calls) == (2, 1)
