"""Compaction faults: a Compact whose response is lost after it wrote its summary is retried by the state
machine, meets its summary in the store, and neither summarizes again nor writes a second one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.store.summaries import SUMMARY_PREFIX
from tests.e2e.conftest import get_tool, http_api
from tests.faults.conftest import EnvironmentStarter
from tests.faults.harness import RUNS_PER_SCENARIO, CountCheck, all_of, ask_and_judge, settle
from tests.faults.lambda_faults import CrashAfterWriteInvoker
from tests.faults.outcomes import ExpectedMessage, ExpectedRun, observation, question, reply
from tests.support.tool_server import Json, ScriptableToolServer
from tests.support.windowed_model import PageReader, WindowedModelServer, page_text

QUESTION = "How many parcels are on the pages?"
PAGES = 8
ANSWER = f"I read {PAGES} pages."


def conversation(asked: str) -> tuple[ExpectedMessage, ...]:
    """The question, a call and a page per iteration, then the answer."""
    return (
        question(asked),
        *(
            message
            for page in range(1, PAGES + 1)
            for message in (reply(page, "", "fetch_page"), observation(page, f"Page {page}:"))
        ),
        reply(PAGES + 1, ANSWER),
    )


@pytest.fixture
def pages() -> Iterator[ScriptableToolServer]:
    """Pages 1 to 8 of 6 KB each."""
    with ScriptableToolServer() as server:
        for page in range(1, PAGES + 1):
            server.on(f"/pages/{page}", Json({"page": page, "text": page_text(page, 6000)}))
        yield server


def reader_config(config_dir: Path, model: WindowedModelServer, pages: ScriptableToolServer) -> Path:
    """A native-tools model with a 10,000-token window reading 6 KB pages."""
    config: dict[str, Any] = {
        "models": {
            "m": {
                "provider": "openai",
                "base_url": model.base_url,
                "model": "windowed-model",
                "api_key": "sk-fault-suite",
                "timeout_seconds": 30,
                "context_window": model.window,
                "capabilities": {"native_tools": True},
            }
        },
        "tools": {
            "apis": [http_api(pages.url, get_tool("fetch_page", "/pages/{page}", page="integer"))],
            "builtin": [],
        },
        "profiles": {
            "default": {
                "model": "m",
                "strategy": "function_calling",
                "limits": {"max_iterations": 12, "max_observation_chars": 8000, "max_parallel_calls": 1},
            }
        },
    }
    (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return config_dir


def test_a_compact_whose_response_is_lost_writes_one_summary_and_summarizes_once(
    pages: ScriptableToolServer, config_dir: Path, start_environment: EnvironmentStarter, request: pytest.FixtureRequest
) -> None:
    reader = PageReader(PAGES)
    with WindowedModelServer(window=10_000, responder=reader) as model:
        # Given an engine whose every Compact invocation crashes once after the handler ran (and wrote)
        environment, listener = start_environment(reader_config(config_dir, model, pages))
        crashing = CrashAfterWriteInvoker(environment.invoker, functions=frozenset({"CompactFunction"}))
        environment.invoker = crashing
        verdicts = []
        for index in range(RUNS_PER_SCENARIO):
            # (the model keeps its place per question)
            asked = f"{QUESTION} #{index}"
            # (the guard flags iteration 5, whose request is still under the threshold, then 6 is compacted)
            compacts = CountCheck(lambda: crashing.crashes, expected=2, what="Compact invocations crashed")
            retries = CountCheck(
                lambda: sum(1 for e in listener.events if e.type == "retry" and e.state == "Compact"),
                expected=2,
                what="Compact retries",
            )
            pages_read = CountCheck(lambda: len(pages.requests), expected=PAGES, what="requests to the tool API")
            # When a run long enough to be compacted executes
            expected = ExpectedRun(conversation=conversation(asked), answer=ANSWER)
            verdicts.append(ask_and_judge(environment, asked, expected, also=all_of(compacts, retries, pages_read)))
            run_id = verdicts[-1].run_id
            # Then it has one summary per compaction step, and the summarizer was asked once per kept chunk
            steps = [step for step in environment.runtime.store.list_steps(run_id) if step.kind == "compaction"]
            stored = _summary_keys(environment, run_id)
            assert len(stored) == len(steps) >= 1, verdicts[-1]
        # Then every run succeeded with the conversation of a run without faults
        assert reader.summaries == sum(
            note.model_calls
            for verdict in verdicts
            for step in environment.runtime.store.list_steps(verdict.run_id)
            if (note := step.compaction) is not None
        )
    settle(request.node, "Lambda: Compact crashes once after writing its summary", verdicts)


def _summary_keys(environment: Any, run_id: str) -> list[str]:
    """The sort keys of the run's summary items, as the table holds them."""
    response = environment.dynamodb.query(
        TableName=environment.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": f"RUN#{run_id}"}, ":prefix": {"S": SUMMARY_PREFIX}},
        ConsistentRead=True,
    )
    return [item["sk"]["S"] for item in response["Items"]]
