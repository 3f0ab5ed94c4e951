"""Lambda faults: a function that runs (and writes) but whose response is lost, so Step Functions retries it.

The retried step meets its first attempt in the store: it calls neither the model nor the tool again
and writes nothing twice, so the conversation is the one a run without faults has. A step that keeps
crashing past its retries ends the run FAILED with the error, with what it wrote still stored once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import get_tool, http_api
from tests.faults.conftest import EnvironmentStarter
from tests.faults.harness import (
    RUNS_PER_SCENARIO,
    CountCheck,
    all_of,
    ask_and_judge,
    openai_model,
    settle,
    write_config,
)
from tests.faults.lambda_faults import SERVICE_EXCEPTION, CrashAfterWriteInvoker
from tests.faults.outcomes import ExpectedMessage, ExpectedRun, observation, question, reply
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import ScriptableToolServer

QUESTION = "How many parcels are in the depot?"
ANSWER = "There are 17 parcels."
TOOL_CALL = {"name": "count_parcels", "arguments": {"depot": "north"}}
# Distinct step invocations of a run with one tool call: IterationGuard, LLMCall and Parse in each of
# 2 iterations, the one ToolInvoke item, and Format.
STEP_INVOCATIONS = 8
# Lambda service errors are retried 3 times: 4 attempts in all.
LAMBDA_ATTEMPTS = 4
ASKED_AND_OBSERVED: tuple[ExpectedMessage, ...] = (
    question(QUESTION),
    reply(1, "", "count_parcels"),
    observation(1, '"parcels":17'),
)


def parcels_config(config_dir: Path, model_server: FakeOpenAIServer, tools: ScriptableToolServer) -> Path:
    """A native-tools model with the parcel-count tool."""
    tool = get_tool("count_parcels", "/parcels", depot="string")
    return write_config(
        config_dir, openai_model(model_server), apis=[http_api(tools.url, tool)], strategy="function_calling"
    )


def test_a_step_whose_response_is_lost_is_retried_without_changing_the_conversation(
    model_server: FakeOpenAIServer,
    parcels_api: ScriptableToolServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given an engine whose every step invocation crashes once after the handler ran
    environment, _ = start_environment(parcels_config(config_dir, model_server, parcels_api))
    crashing = CrashAfterWriteInvoker(environment.invoker)
    environment.invoker = crashing
    expected = ExpectedRun(conversation=(*ASKED_AND_OBSERVED, reply(2, ANSWER)), answer=ANSWER)
    verdicts = []
    for _ in range(RUNS_PER_SCENARIO):
        # (a model that calls the tool once, then answers)
        model_server.enqueue(body=chat_completion(tool_calls=[TOOL_CALL]))
        model_server.enqueue(body=chat_completion(content=ANSWER))
        checks = all_of(
            CountCheck(lambda: crashing.crashes, expected=STEP_INVOCATIONS, what="crashes injected"),
            CountCheck(lambda: len(model_server.requests), expected=2, what="requests to the model"),
            CountCheck(lambda: len(parcels_api.requests), expected=1, what="requests to the tool API"),
        )
        # When a question is asked
        verdicts.append(ask_and_judge(environment, QUESTION, expected, also=checks))
    # Then every run succeeded with the conversation of a run without faults, each call made once
    settle(request.node, "Lambda: every step crashes once after writing", verdicts)


def test_a_step_that_keeps_crashing_after_writing_ends_the_run_failed_with_its_write_kept_once(
    model_server: FakeOpenAIServer,
    parcels_api: ScriptableToolServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given an engine whose ToolInvoke invocations all crash after the handler ran
    environment, _ = start_environment(parcels_config(config_dir, model_server, parcels_api))
    crashing = CrashAfterWriteInvoker(
        environment.invoker, crashes_per_event=None, functions=frozenset({"ToolInvokeFunction"})
    )
    environment.invoker = crashing
    model_server.default(body=chat_completion(tool_calls=[TOOL_CALL]))
    expected = ExpectedRun(
        conversation=ASKED_AND_OBSERVED,
        status="FAILED",
        stop_reason="error",
        error_type=SERVICE_EXCEPTION,
        error_fragment="response was lost",
    )
    verdicts = []
    for _ in range(RUNS_PER_SCENARIO):
        checks = all_of(
            CountCheck(lambda: crashing.crashes, expected=LAMBDA_ATTEMPTS, what="crashes injected"),
            CountCheck(lambda: len(parcels_api.requests), expected=1, what="requests to the tool API"),
        )
        # When a question is asked
        verdicts.append(ask_and_judge(environment, QUESTION, expected, also=checks))
    # Then every run is FAILED with the Lambda error, its one observation stored once and the tool called once
    settle(request.node, "Lambda: ToolInvoke crashes after writing past its retries", verdicts)
