"""A tool answering hostile bytes never fails the run: the real state machine, handlers and store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.e2e.conftest import ConfigWriter, get_tool, http_api, react_action, react_answer, scripted_model
from tests.support.tool_server import Raw, ScriptableToolServer


def test_a_tool_answering_json_with_a_lone_surrogate_leaves_a_succeeded_run(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ScriptableToolServer() as api:
        # Given a tool whose JSON answer decodes to a lone surrogate
        api.on("/lookup", Raw(rb'{"answer": "forty-two\ud800"}'))
        config = write_config(
            scripted_model(react_action("lookup", {"q": "life"}), react_answer("42.")),
            apis=[http_api(api.url, get_tool("lookup", "/lookup", q="string"))],
        )
        environment, _ = local_run(config)

        # When the question is asked
        meta, execution = environment.ask("what is the answer?")

    # Then the run succeeded with the repaired observation stored once, and the note the model read
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "42.")
    tool_messages = [m.content for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert len(tool_messages) == 1
    assert tool_messages[0].startswith('{"answer":"forty-two\ufffd"}')
    assert "replaced with U+FFFD" in tool_messages[0]
