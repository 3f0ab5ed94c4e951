"""Tool faults at the wire (a loopback tool API told to misbehave), through the local engine.

Whatever the tool does — fail, hang past its time limit, reset the connection, send far too much or
bytes that are not text — the call leaves one observation saying so, the model reads it, and the run
succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import get_tool, http_api, react_action, react_answer, scripted_model
from tests.faults.conftest import EnvironmentStarter
from tests.faults.harness import RUNS_PER_SCENARIO, CountCheck, ask_and_judge, settle, write_config
from tests.faults.outcomes import ExpectedRun, observation, question, reply
from tests.support.tool_server import Behaviour, Binary, Hang, HugeBody, Reset, ScriptableToolServer, Status

QUESTION = "Look up order 42."
# the hanging tool's limit, short so that its scenario is quick; the other faults answer at once, and are held to
# a limit a loaded machine's tool server never reaches (at 300 ms, a 500 under load read as a timeout)
HANG_LIMIT_MS = 300
TOOL_LIMIT_MS = 30_000
MAX_RESPONSE_BYTES = 8192
MAX_OBSERVATION_CHARS = 4000  # the profile's default limit
ACTION = react_action("lookup", {"q": "order 42"})
ANSWER = "The lookup did not give a usable result."


@dataclass(frozen=True)
class ToolFault:
    """How the tool API misbehaves, and what the observation must then say."""

    behaviour: Behaviour
    says: tuple[str, ...]
    limit_ms: int = TOOL_LIMIT_MS


TOOL_FAULTS = {
    "tool: HTTP 500": ToolFault(Status(500, "database is down"), ("Error", "HTTP 500", "database is down")),
    "tool: hangs past maxExecutionTime": ToolFault(
        Hang(10), ("Error", "timed out after 0.3 s"), limit_ms=HANG_LIMIT_MS
    ),
    "tool: connection reset": ToolFault(Reset(), ("Error", "reset or closed")),
    "tool: huge body (truncated)": ToolFault(HugeBody(size=2_000_000), ("xxxx", "…[truncated")),
    "tool: binary body (described)": ToolFault(
        Binary(), ("[binary response:", "application/octet-stream", "not shown")
    ),
}


def lookup_api(url: str, limit_ms: int) -> dict[str, Any]:
    """The tool API entry: one GET tool, held to `limit_ms` and a small body cap."""
    return http_api(url, get_tool("lookup", "/lookup", q="string"), timeout_ms=limit_ms) | {
        "maxResponseBytes": MAX_RESPONSE_BYTES
    }


@pytest.mark.parametrize("scenario", list(TOOL_FAULTS))
def test_a_misbehaving_tool_becomes_an_observation_and_the_run_succeeds(
    scenario: str, config_dir: Path, start_environment: EnvironmentStarter, request: pytest.FixtureRequest
) -> None:
    fault = TOOL_FAULTS[scenario]
    with ScriptableToolServer(default=fault.behaviour) as tools:
        # Given a model that calls the tool once, then answers, and a tool API that misbehaves
        config = write_config(
            config_dir, scripted_model(ACTION, react_answer(ANSWER)), apis=[lookup_api(tools.url, fault.limit_ms)]
        )
        environment, _ = start_environment(config)
        expected = ExpectedRun(
            conversation=(
                question(QUESTION),
                reply(1, ACTION["content"]),
                observation(1, *fault.says, max_chars=MAX_OBSERVATION_CHARS),
                reply(2, react_answer(ANSWER)["content"]),
            ),
            answer=ANSWER,
        )
        verdicts = []
        for _ in range(RUNS_PER_SCENARIO):
            calls = CountCheck(lambda: len(tools.requests), expected=1, what="requests to the tool API")
            # When a question is asked
            verdicts.append(ask_and_judge(environment, QUESTION, expected, also=calls))
    # Then every run succeeded with one observation saying what the tool did, and the tool was called once
    settle(request.node, scenario, verdicts)
