"""`stepwise serve` killed (SIGKILL) while a child run works for its parent, then started again on the same
store: both runs resume, and the parent's resumed wait finds the child it started instead of starting another."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from stepwise.local.server import LocalApi
from tests.support.delegation import CHILD_ANSWER, PARENT_ANSWER, SLOW, delegating_config
from tests.support.polling import run_seen, wait_for
from tests.support.serve_process import ServeProcess

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}
HEADERS = {"x-api-key": "recovery"}


def _poll(url: str, path: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """GET `path` until `until(body)` holds; fails naming the last answer if it does not."""
    with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:

        def read() -> dict[str, Any]:
            body: dict[str, Any] = client.get(path).json()
            return body

        return wait_for(read, until, what=f"GET {path}", shown=run_seen, interval=0.1)


def test_a_parent_and_its_child_both_succeed_after_serve_is_killed_with_one_child_run(
    dynamodb_local: str, unique_table_name: str, tmp_path: Path
) -> None:
    # Given `stepwise serve` on DynamoDB Local, and a parent whose child run is working (its model takes 1 s)
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(delegating_config(slow_latency_ms=1000)), encoding="utf-8")
    arguments = ["--config", str(tmp_path / "stepwise.yaml"), "--dynamodb-endpoint", dynamodb_local]
    arguments += ["--table-name", unique_table_name, "--workers", "0"]
    first = ServeProcess(arguments)
    response = httpx.post(f"{first.url}/v1/runs", json={"input": f"The tower, {SLOW}."}, headers=HEADERS)
    run_id = response.json()["run_id"]
    parent = _poll(first.url, f"/v1/runs/{run_id}", lambda run: bool(run.get("child_runs")))
    child_id = parent["child_runs"][0]["run_id"]
    _poll(first.url, f"/v1/runs/{child_id}", lambda run: run["status"] == "RUNNING")
    # When the server is killed while the child runs, and started again on the same store (in this process:
    # the restart resumes what the store holds open, however it is started)
    first.end(signal.SIGKILL)
    with LocalApi(config_dir=tmp_path, dynamodb_endpoint_url=dynamodb_local, table_name=unique_table_name) as second:
        parent = _poll(second.url, f"/v1/runs/{run_id}", lambda run: run["status"] in TERMINAL)
        child = _poll(second.url, f"/v1/runs/{child_id}", lambda run: run["status"] in TERMINAL)
        listed = httpx.get(f"{second.url}/v1/runs", headers=HEADERS, params={"limit": 50}).json()["runs"]
        resumed = sorted(second.recovery.resumed)
    # Then both succeeded, the parent with the child's answer
    assert (parent["status"], parent["answer"]) == ("SUCCEEDED", PARENT_ANSWER)
    assert (child["status"], child["answer"]) == ("SUCCEEDED", CHILD_ANSWER)
    assert resumed == sorted([run_id, child_id])
    # And exactly one child run exists: the parent lists it, and the owner's runs are the parent and it
    assert [link["run_id"] for link in parent["child_runs"]] == [child_id]
    assert sorted((run["profile"], run["run_id"]) for run in listed) == [("lead", run_id), ("researcher", child_id)]
