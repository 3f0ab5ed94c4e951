"""Agents as tools through `stepwise serve` (in process): the real state machine and handlers, a scripted
`lead` profile that delegates to a scripted `researcher` profile (tests/support/delegation.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from stepwise.local.environment import LocalEnvironment
from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve
from tests.support.delegation import (
    CHILD_ANSWER,
    LEAD_TURN_TOKENS,
    PARENT_ANSWER,
    RESEARCHER_TURN_TOKENS,
    SLOW,
    delegating_config,
)
from tests.support.polling import run_seen, wait_for

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    # a slow child takes 2 s: long enough to be caught running, short enough for the server's drain at the end
    with serve(delegating_config(slow_latency_ms=2000), tmp_path_factory.mktemp("delegation")) as served:
        yield served


@pytest.fixture
def client(api: LocalApi) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, headers={"x-api-key": "alice"}, timeout=30) as opened:
        yield opened


def poll(client: httpx.Client, path: str, until: Any) -> dict[str, Any]:
    """GET `path` until `until(body)` holds; fails naming the last answer if it does not."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(path).json()
        return body

    return wait_for(read, until, what=f"GET {path}", shown=run_seen)


def test_a_parent_that_delegates_gets_the_childs_answer_and_spends_its_tokens(client: httpx.Client) -> None:
    # Given the lead profile, whose model calls the researcher agent, then answers
    run_id = client.post("/v1/runs", json={"input": "Tell me about the tower."}).json()["run_id"]
    # When its run ends
    parent = poll(client, f"/v1/runs/{run_id}?trace=true", lambda run: run["status"] in TERMINAL)
    # Then both runs succeeded: the child's answer is the parent's observation, and in its final answer
    assert (parent["status"], parent["answer"]) == ("SUCCEEDED", PARENT_ANSWER)
    [call] = [step for step in parent["trace"] if step["kind"] == "tool"]
    assert (call["tool"], call["observation"], call["ok"]) == ("researcher", CHILD_ANSWER, True)
    [link] = parent["child_runs"]
    assert (link["run_id"], link["profile"], link["call_id"]) == (call["child_run_id"], "researcher", call["call_id"])
    child = client.get(f"/v1/runs/{link['run_id']}").json()
    assert (child["status"], child["answer"], child["profile"]) == ("SUCCEEDED", CHILD_ANSWER, "researcher")
    assert (child["parent_run_id"], child["parent_call_id"]) == (run_id, call["call_id"])
    # And the parent's usage holds its two model calls and the child's one
    assert parent["usage"]["input_tokens"] == 2 * LEAD_TURN_TOKENS[0] + RESEARCHER_TURN_TOKENS[0]
    assert parent["usage"]["output_tokens"] == 2 * LEAD_TURN_TOKENS[1] + RESEARCHER_TURN_TOKENS[1]
    assert parent["usage"]["llm_calls"] == 3
    assert child["usage"]["input_tokens"] == RESEARCHER_TURN_TOKENS[0]


def test_cancelling_a_parent_cancels_its_running_child(client: httpx.Client) -> None:
    # Given a parent whose child is running (its model takes 2 s)
    run_id = client.post("/v1/runs", json={"input": f"Tell me about the tower, {SLOW}."}).json()["run_id"]
    parent = poll(client, f"/v1/runs/{run_id}", lambda run: bool(run.get("child_runs")))
    [link] = parent["child_runs"]
    poll(client, f"/v1/runs/{link['run_id']}", lambda run: run["status"] == "RUNNING")
    # When the parent is cancelled
    response = client.post(f"/v1/runs/{run_id}/cancel")
    # Then the parent and its child are both CANCELLED, and the child says by whom
    assert response.status_code == 200, response.text
    child = client.get(f"/v1/runs/{link['run_id']}").json()
    assert (response.json()["status"], child["status"], child["cancelled_by"]) == ("CANCELLED", "CANCELLED", "alice")
    assert client.get(f"/v1/runs/{run_id}").json()["child_runs"][0]["status"] == "CANCELLED"


def test_on_an_express_workflow_an_agent_call_is_answered_without_a_child(tmp_path: Path) -> None:
    # Given the lead profile served with an Express workflow, which cannot wait for a callback
    with (
        serve(delegating_config(), tmp_path, workflow_type="EXPRESS") as express,
        httpx.Client(base_url=express.url, headers={"x-api-key": "alice"}, timeout=30) as client,
    ):
        run_id = client.post("/v1/runs", json={"input": "Tell me about the tower."}).json()["run_id"]
        # When its run ends
        parent = poll(client, f"/v1/runs/{run_id}?trace=true", lambda run: run["status"] in TERMINAL)
    # Then it succeeded without a child: the call's observation says delegation needs a Standard workflow
    [call] = [step for step in parent["trace"] if step["kind"] == "tool"]
    assert parent["status"] == "SUCCEEDED"
    assert "needs a Standard workflow" in call["observation"]
    assert (call["ok"], call["child_run_id"], parent["child_runs"]) == (False, None, [])


def test_a_parent_waiting_for_its_child_does_not_keep_the_child_from_running(tmp_path: Path) -> None:
    # Given serve running one execution at a time, which a parent waiting for its child holds
    with (
        serve(delegating_config(), tmp_path, max_concurrent_executions=1) as single,
        httpx.Client(base_url=single.url, headers={"x-api-key": "alice"}, timeout=30) as client,
    ):
        run_id = client.post("/v1/runs", json={"input": "Tell me about the tower."}).json()["run_id"]
        # When its run ends
        parent = poll(client, f"/v1/runs/{run_id}", lambda run: run["status"] in TERMINAL)
    # Then the child ran beside it, and both succeeded
    assert (parent["status"], parent["answer"], parent["child_runs"][0]["status"]) == (
        "SUCCEEDED",
        PARENT_ANSWER,
        "SUCCEEDED",
    )


def test_a_local_command_s_engine_runs_the_child_too(tmp_path: Path) -> None:
    # Given the configuration run as `stepwise run` runs it: the execution in the command's own engine
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(delegating_config()), encoding="utf-8")
    with LocalEnvironment(config_dir=tmp_path, retry_interval_scale=0.0) as environment:
        # When a question is asked of the lead profile
        parent, result = environment.ask("Tell me about the tower.")
        children = environment.runtime.store.child_runs.children(parent.run_id)
    # Then its child ran through the endpoint the environment started, and both succeeded
    assert (result.status, parent.status, parent.answer) == ("SUCCEEDED", "SUCCEEDED", PARENT_ANSWER)
    assert [(child.profile, child.status) for child in children] == [("researcher", "SUCCEEDED")]
