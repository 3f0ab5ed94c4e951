"""The window a refusal states travels with the run: Compact, perhaps in another container than the LLMCall the
provider refused, reads it from the caught error and puts it in the payload's run context (moto table)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from stepwise.config.model import StepwiseConfig
from stepwise.llm.provider_errors import openai_error
from stepwise.local.asl.lambda_integration import function_error
from stepwise.models.messages import ChatMessage, ChatRequest, Completion
from stepwise.models.state import CompactEvent, RunContext, StatePayload
from stepwise.steps.compaction import compact
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.token_estimate import request_tokens
from stepwise.store import ConversationStore
from stepwise.store.keys import ASSISTANT_SLOT
from tests.support.openai_server import chat_completion
from tests.support.windowed_model import WindowedModelServer
from tests.unit.steps.test_format_step import QueuedModel, run_to_format, runtime_with

REFUSAL = (
    "This model's maximum context length is 10000 tokens. However, your messages resulted in 10921 tokens. Please "
    "reduce the length of the messages."
)


def test_compact_learns_the_window_the_caught_refusal_states(dynamodb_table: tuple[Any, str], tmp_path: Path) -> None:
    # Given a run whose model call was refused, the refusal stating the window, caught as Step Functions records it
    runtime = runtime_with(QueuedModel(Completion(content="Rainy.")), dynamodb_table, tmp_path)
    payload = run_to_format(runtime)
    failure = function_error(openai_error("m", 400, "context_length_exceeded", REFUSAL))
    assert failure.error == "ContextWindowExceeded"
    cause = failure.cause
    event = CompactEvent.model_validate(
        payload.model_dump() | {"overflow": {"Error": "ContextWindowExceeded", "Cause": cause}}
    )
    assert payload.run is not None and payload.run.learned_window is None
    # When Compact runs
    compacted = compact(event, runtime)
    # Then the payload's run context carries the window, for every later step of the run
    assert compacted.run is not None and compacted.run.learned_window == 10_000


class LoadedSmallerModel:
    """A model LM Studio loaded with an 8,192-token window: a longer request is refused in LM Studio's words."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        tokens = request_tokens(request)
        if tokens > 8192:
            raise openai_error(
                "m",
                400,
                None,
                f"Trying to keep the first {tokens} tokens when context the overflows. However, the model is loaded "
                "with context length of only 8192 tokens, which is not enough. Try to load the model with a larger "
                "context length, or provide a shorter input",
            )
        return Completion(content="Rainy.")


def test_a_refusal_stating_a_smaller_window_than_the_listing_is_believed_and_the_call_fits_it(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a model whose window its listing gave as 32,768 (LM Studio's largest for it) but which is loaded
    # with 8,192, and a first question of about 20,000 tokens (nothing to summarize yet)
    model = LoadedSmallerModel()
    config = StepwiseConfig.from_mapping(
        {
            "models": {
                "m": {
                    "provider": "openai",
                    # never called over HTTP (the model is given below); a server of this test only, so the
                    # window learned here is not another test's
                    "base_url": "http://127.0.0.1:9/smaller-than-listed/v1",
                    "model": "qwen2-vl-7b-instruct",
                    "api_key": "lm-studio",
                }
            },
            "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
        },
        environ={},
    )
    client, table_name = dynamodb_table
    runtime = StepRuntime(
        config=config, config_dir=tmp_path, store=ConversationStore(client, table_name), chat_models={"m": model}
    )
    question = "Weather in Paris? " + "The forecast archive says it rained. " * 1700
    meta = create_run(runtime, messages=[ChatMessage(role="user", content=question)], owner="a", profile="default")
    payload = iteration_guard(StatePayload.model_validate(execution_input(meta.run_id)), runtime)
    run = payload.run or RunContext.from_meta(runtime.store.require_run(meta.run_id))
    payload = payload.model_copy(update={"run": run.model_copy(update={"learned_window": 32768})})
    # When LLMCall calls it
    called = llm_call(payload, runtime)
    # Then the refusal's window replaced the listed one, the question was cut to fit it, and the call went through
    assert called.run is not None and called.run.learned_window == 8192
    assert [request_tokens(request) > 8192 for request in model.requests] == [True, False]
    stored = runtime.store.stored_message(meta.run_id, 1, ASSISTANT_SLOT)
    assert stored is not None and stored[0].content == "Rainy."


RUNS_AT_ONCE = 4


def test_runs_making_their_first_model_call_at_once_all_carry_the_window_the_server_lists(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a local model whose window nothing configures, its server listing it slowly (answered once the other
    # runs' first calls have come, had they gone on without it, or after a moment), and four runs queued
    others_called = threading.Event()
    calls: list[dict[str, Any]] = []
    lock = threading.Lock()

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            calls.append(body)
            if len(calls) == RUNS_AT_ONCE - 1:
                others_called.set()
        return chat_completion("Rainy.")

    # a model name of its own: what is learned is remembered for the process, by server and model
    listed = f"listed-{uuid.uuid4().hex[:8]}"
    with WindowedModelServer(
        window=32_000, responder=answer, listed_model=listed, listing_gate=others_called
    ) as server:
        model = {"provider": "openai", "base_url": server.base_url, "model": listed, "api_key": "sk-listed-window"}
        config = StepwiseConfig.from_mapping(
            {"models": {"m": model}, "profiles": {"default": {"model": "m", "strategy": "react"}}}, environ={}
        )
        client, table = dynamodb_table
        runtime = StepRuntime(config=config, config_dir=tmp_path, store=ConversationStore(client, table))
        question = [ChatMessage(role="user", content="Rain?")]
        runs = [create_run(runtime, messages=question, owner="o", profile="default") for _ in range(RUNS_AT_ONCE)]
        queued = [iteration_guard(StatePayload.model_validate(execution_input(run.run_id)), runtime) for run in runs]
        # When the runs make their first model call at once
        start = threading.Barrier(RUNS_AT_ONCE)
        called: list[StatePayload] = []

        def first_call(payload: StatePayload) -> None:
            start.wait()
            called.append(llm_call(payload, runtime))

        threads = [threading.Thread(target=first_call, args=(payload,)) for payload in queued]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # Then the server was asked for its listing once, and every run carries the window it lists
    assert server.listings == 1
    assert [payload.run.learned_window if payload.run else None for payload in called] == [32_000] * RUNS_AT_ONCE
