"""Stepwise as an MCP server: the official `mcp` client against `stepwise serve` at `/mcp`, with accepted keys.

One `stepwise serve` for the module (its whole stack in this process, as `--api-key` configures it), on the
session's DynamoDB Local; its profiles run on a scripted model. The SDK's streamable HTTP client is the judge.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from stepwise.local.server import LocalApi
from tests.e2e.conftest import react_action, react_answer, serve
from tests.support.polling import wait_for

KEY = "mcp-key"
# What a model turn takes, so that a run has steps to report while it goes on.
TURN_MS = 200


def config() -> dict[str, Any]:
    """An `assistant` that asks for the time and answers; a `guarded` profile whose input guardrail blocks."""
    time_then_answer = [
        {**react_action("current_time", {}), "latency_ms": TURN_MS},
        {**react_answer("It is noon."), "latency_ms": TURN_MS},
    ]
    slow = [{**react_action("current_time", {}), "latency_ms": 1500}, react_answer("Late.")]
    model = {"provider": "scripted", "scenarios": [{"match": "slowly", "turns": slow}, {"turns": time_then_answer}]}
    profile = {"model": "m", "strategy": "react", "protocol": "react_json", "tools": ["current_time"]}
    guarded = {**profile, "guardrails": {"input": [{"deny": ["(?i)forbidden"]}]}}
    return {
        "models": {"m": model},
        "tools": {"builtin": ["current_time"]},
        "profiles": {"assistant": {**profile, "description": "Tells the time."}, "guarded": guarded},
        "default_profile": "assistant",
    }


@pytest.fixture(scope="module")
def served(dynamodb_local: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    options = {"dynamodb_endpoint_url": dynamodb_local, "table_name": "serve-mcp", "accepted_keys": frozenset({KEY})}
    with serve(config(), Path(tmp_path_factory.mktemp("mcp")), **options) as server:
        yield server


def texts(result: CallToolResult) -> list[str]:
    """The text blocks of a tool result."""
    return [block.text for block in result.content if isinstance(block, TextContent)]


def connect(served: LocalApi, key: str = KEY, statuses: list[int] | None = None, mode: str = "auto") -> Client:
    """The SDK's client on `/mcp`, sending `key`; the HTTP status of each answer goes to `statuses`."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    # a read waits as long as a run may go without a step (no progress token: nothing until the result)
    http = httpx2.AsyncClient(headers={"x-api-key": key}, event_hooks={"response": [record]}, timeout=120)
    return Client(streamable_http_client(f"{served.url}/mcp", http_client=http), mode=mode)


def test_the_client_lists_the_profiles_as_tools_with_their_descriptions(served: LocalApi) -> None:
    async def listed() -> list[tuple[str, str | None, list[str]]]:
        async with connect(served) as client:
            tools = (await client.list_tools()).tools
        return [(tool.name, tool.description, tool.input_schema["required"]) for tool in tools]

    # When the client lists the tools, then each profile is one, described, taking a question
    assert anyio.run(listed) == [
        ("assistant", "Tells the time. (the default profile)", ["question"]),
        ("guarded", "Ask the Stepwise agent profile 'guarded'.", ["question"]),
    ]


def test_a_tool_call_runs_the_profile_and_returns_the_runs_answer(served: LocalApi) -> None:
    async def called() -> Any:
        async with connect(served) as client:
            return await client.call_tool("assistant", {"question": "What time is it?"})

    # When the client calls the profile's tool
    result = anyio.run(called)
    # Then the result is the run's answer, and names the run, which the API shows SUCCEEDED to the same key
    assert (result.is_error, texts(result)) == (False, ["It is noon."])
    run = httpx.get(f"{served.url}/v1/runs/{result.meta['stepwise/run_id']}", headers={"x-api-key": KEY}).json()
    assert (run["status"], run["profile"], run["answer"]) == ("SUCCEEDED", "assistant", "It is noon.")


def test_a_multi_step_run_reports_its_steps_as_progress(served: LocalApi) -> None:
    reported: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, message))

    async def called() -> None:
        async with connect(served) as client:
            await client.call_tool("assistant", {"question": "Time, please?"}, progress_callback=on_progress)

    # When the client calls the tool with a progress callback (so its request carries a progress token)
    anyio.run(called)
    # Then each step of the run arrived as a notification, in order, counting up, ending with the run's end
    steps = [message.partition(": ")[2] for _, message in reported if message and message.startswith("iteration")]
    assert steps == ["llm", "parse current_time", "tool current_time", "llm", "parse"]
    assert [value for value, _ in reported] == list(range(1, len(reported) + 1))
    assert (reported[-1][1] or "").endswith("is SUCCEEDED")


def test_a_failed_run_is_an_error_result_saying_why(served: LocalApi) -> None:
    async def called() -> Any:
        async with connect(served) as client:
            return await client.call_tool("guarded", {"question": "Something forbidden"})

    # When the call's run ends FAILED (its input blocked by a guardrail)
    result = anyio.run(called)
    # Then the result is an error, saying how the run ended and why
    assert result.is_error is True
    assert "ended FAILED (GuardrailBlocked" in texts(result)[0]


def test_a_wrong_key_gets_401(served: LocalApi) -> None:
    statuses: list[int] = []

    async def listed() -> None:
        async with connect(served, key="not-accepted", statuses=statuses) as client:
            await client.list_tools()

    # When the client presents a key the server does not accept, then it cannot connect: 401
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises a group of its tasks' errors; the status is the point
        anyio.run(listed)
    assert set(statuses) == {401}


def test_cancelling_a_call_cancels_its_run(served: LocalApi) -> None:
    async def given_up() -> None:
        async with connect(served) as client:
            with anyio.CancelScope() as call:

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    call.cancel()  # the run exists once it reports: give up then

                question = {"question": "Time, slowly", "session_id": "mcp-cancel"}
                await client.call_tool("assistant", question, progress_callback=on_progress)

    # When the client gives up on a call while its run goes on (the SDK cancels the request)
    anyio.run(given_up)
    # Then the run is cancelled
    runs = wait_for(
        lambda: httpx.get(f"{served.url}/v1/runs?session_id=mcp-cancel", headers={"x-api-key": KEY}).json()["runs"],
        lambda runs: bool(runs) and runs[0]["status"] == "CANCELLED",
        what="the MCP call's run was cancelled",
        interval=0.2,
    )
    assert json.dumps([(run["status"], run["stop_reason"]) for run in runs]) == '[["CANCELLED", "cancelled"]]'


def test_a_handshake_era_clients_cancellation_notice_cancels_the_run_its_call_started(served: LocalApi) -> None:
    def session_runs() -> list[dict[str, Any]]:
        answer = httpx.get(f"{served.url}/v1/runs?session_id=mcp-legacy-cancel", headers={"x-api-key": KEY})
        runs: list[dict[str, Any]] = answer.json()["runs"]
        return runs

    async def given_up() -> list[str]:
        # a 2025-11-25 client: it cancels by posting notifications/cancelled, its call's response still open
        async with connect(served, mode="legacy") as client:
            with anyio.CancelScope() as call:

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    call.cancel()

                question = {"question": "Time, slowly", "session_id": "mcp-legacy-cancel"}
                await client.call_tool("assistant", question, progress_callback=on_progress)
            # read while the client is still connected: the notice, not a closed connection, cancelled it
            seen: list[str] = []
            with anyio.move_on_after(10):
                while "CANCELLED" not in seen:
                    seen = [run["status"] for run in await anyio.to_thread.run_sync(session_runs)]
                    await anyio.sleep(0.2)
            return seen

    # When the client gives up on the call, then its run is cancelled, within a few seconds
    assert anyio.run(given_up) == ["CANCELLED"]


def test_get_and_delete_are_405_as_a_stateless_server_answers(served: LocalApi) -> None:
    # When a client asks for a stream of the server's own, or ends a session
    headers = {"x-api-key": KEY, "accept": "text/event-stream"}
    answers = [httpx.request(method, f"{served.url}/mcp", headers=headers) for method in ("GET", "DELETE")]
    # Then there is none to give: 405, POST being the only method
    assert [(answer.status_code, answer.headers["allow"]) for answer in answers] == [(405, "POST"), (405, "POST")]
