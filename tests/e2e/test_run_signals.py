"""`stepwise run` sent SIGTERM while a POST tool call is in flight: the call finishes and its outcome is
recorded, the run ends CANCELLED, and the command says so and exits 143 (128 + SIGTERM), as Ctrl-C does.

The command runs in this process (`stepwise.cli.main`), which a thread sends the signal once the tool API
has the call; the store (moto's server on loopback), the model (an OpenAI-compatible fake) and the tool
API are this test's, so they outlive the command.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml

from stepwise.cli import main
from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB
from stepwise.store import ConversationStore
from tests.e2e.test_serve_lifecycle import dynamodb_client_for
from tests.e2e.test_serve_tool_crash import TRANSFER, transfer_tool
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Hang, ScriptableToolServer

TABLE = "run-signals"


def terminate_once_called(tool_api: ScriptableToolServer) -> None:
    """SIGTERM to this process as soon as the tool API has received a call."""
    deadline = time.monotonic() + 120
    while not tool_api.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGTERM)


def test_run_sent_sigterm_mid_post_lets_the_call_finish_and_ends_the_run_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with EmbeddedDynamoDB() as dynamodb, FakeOpenAIServer() as model, ScriptableToolServer() as tool_api:
        # Given a run whose model asks for a transfer (a POST), which the tool API answers after 1 s
        tool_api.on("/transfer", Hang(seconds=1))
        model.enqueue(body=chat_completion(tool_calls=[{"name": "transfer", "arguments": TRANSFER}]))
        api = {"url": tool_api.url, "internal": True, "maxExecutionTime": 30_000, "tools": [transfer_tool()]}
        config = {
            "models": {"m": {"provider": "openai", "base_url": model.base_url, "model": "fake-model"}},
            "tools": {"apis": [api]},
            "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        arguments = [
            *("run", "send bob 5", "--json", "--config", str(tmp_path / "stepwise.yaml")),
            *("--dynamodb-endpoint", dynamodb.endpoint_url, "--table-name", TABLE),
        ]
        # When the command is sent SIGTERM while the transfer is in flight
        sender = threading.Thread(target=terminate_once_called, args=(tool_api,), daemon=True)
        sender.start()
        out = io.StringIO()
        code = main(arguments, out=out)
        sender.join()
        outcome = json.loads(out.getvalue())
        messages = ConversationStore(dynamodb_client_for(dynamodb.endpoint_url), TABLE).list_messages(outcome["run_id"])
        err = capsys.readouterr().err
    # Then it said so in one line and exited 143; the transfer was sent once and its answer stored (its
    # outcome is known), and the run ended CANCELLED without calling the model again
    assert code == 128 + signal.SIGTERM
    assert err.strip().splitlines() == [
        "stepwise run: SIGTERM: stopping once the step in flight finishes (send SIGTERM again to stop at once)"
    ]
    assert [request.path for request in tool_api.requests] == ["/transfer"]
    assert [message.content for message in messages if message.role == "tool"] == ['{"late":true}']
    assert (outcome["status"], outcome["usage"]["tool_calls"], len(model.requests)) == ("CANCELLED", 1, 1)
