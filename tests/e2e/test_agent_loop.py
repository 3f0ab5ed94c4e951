"""The real statemachine/agent.asl.json in the local engine, with the real handlers, end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from stepwise.local.example_api import ExampleToolApi
from tests.e2e.conftest import (
    ConfigWriter,
    StoreChoice,
    get_tool,
    http_api,
    parametrized_store,
    react_action,
    react_answer,
    scripted_model,
)
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.state_payloads import size_less_counters
from tests.support.tool_server import Hang, ScriptableToolServer, Status


@pytest.fixture(params=["moto", "dynamodb-local"])
def store(request: pytest.FixtureRequest, unique_table_name: str) -> StoreChoice:
    """Every scenario of this module against moto and against AWS's DynamoDB Local."""
    return parametrized_store(request, unique_table_name)


def openai_model(server: FakeOpenAIServer) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }


def test_a_question_answered_without_tools_succeeds_in_one_iteration(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model that answers straight away
    environment, listener = local_run(write_config(scripted_model(react_answer("Hello there."))))
    # When a question is asked
    meta, execution = environment.ask("hi")
    # Then the run succeeded with the answer, through guard, model, parse and format
    assert (execution.status, meta.status, meta.stop_reason, meta.answer) == (
        "SUCCEEDED",
        "SUCCEEDED",
        "final_answer",
        "Hello there.",
    )
    assert listener.entered() == [
        "IterationGuard",
        "NeedsCompaction",
        "LLMCall",
        "Parse",
        "Route",
        "Format",
        "EvaluateOnline",
        "Done",
    ]


def test_one_tool_call_reaches_the_tool_api_and_its_observation_is_stored(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a model that asks for the weather in Paris, then answers
        config = write_config(
            scripted_model(react_action("get_weather", {"city": "Paris"}), react_answer("Mild.")),
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        environment, _ = local_run(config)
        # When the question is asked
        meta, _ = environment.ask("weather in Paris?")
    # Then the observation holds the API's answer for Paris and the run used 2 iterations and 1 tool call
    tool_messages = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert len(tool_messages) == 1
    assert "Paris" in tool_messages[0].content
    assert (meta.answer, meta.iteration, meta.usage.tool_calls, meta.usage.llm_calls) == ("Mild.", 2, 1, 2)
    # and META keeps what a listing shows and filters on: the question, and the tool called (at its end)
    assert (meta.question, meta.tools) == ("weather in Paris?", ["get_weather"])


def test_two_tool_calls_in_one_response_run_in_the_map_and_both_are_observed(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a native-tools model that asks for two tools at once
        calls = [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
        ]
        config = write_config(
            scripted_model({"tool_calls": calls}, {"content": "Both done."}, native_tools=True),
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
            strategy="function_calling",
        )
        environment, listener = local_run(config)
        # When the question is asked
        meta, _ = environment.ask("weather in Paris and Tokyo?")
    # Then both calls ran as Map items and both observations are stored, in call order
    observations = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert listener.entered().count("InvokeTool") == 2
    assert ["Paris" in observations[0].content, "Tokyo" in observations[1].content] == [True, True]
    assert meta.answer == "Both done."


def test_a_transient_model_error_is_retried_to_success(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model endpoint that answers 429 once, then a completion
        server.enqueue(status=429, body={"error": {"message": "rate limited"}})
        server.enqueue(body=chat_completion(content="Recovered."))
        environment, listener = local_run(write_config(openai_model(server), strategy="function_calling"))
        # When the question is asked
        meta, _ = environment.ask("hi")
        # Then the state machine retried LLMCall and the run succeeded
        assert len(server.requests) == 2
    assert [e.state for e in listener.events if e.type == "retry"] == ["LLMCall"]
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Recovered.")


def test_a_permanent_model_error_ends_the_run_failed_with_the_error_stored(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model endpoint that rejects the request with 400
        server.default(status=400, body={"error": {"message": "model 'nope' does not exist"}})
        environment, listener = local_run(write_config(openai_model(server), strategy="function_calling"))
        # When the question is asked
        meta, execution = environment.ask("hi")
        # Then the model was called once (no retry), the execution failed, and META says why
        assert len(server.requests) == 1
    assert execution.status == "FAILED"
    assert meta.status == "FAILED"
    assert meta.error is not None and meta.error.type == "LLMPermanentError"
    assert "does not exist" in meta.error.message
    assert "FormatFailure" in listener.entered()


def test_the_iteration_limit_ends_the_run_with_a_non_empty_answer(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a native-tools model that asks for a tool every time, and a limit of 3 iterations
        server.default(
            body=chat_completion(
                content="Still checking the weather.",
                tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
            )
        )
        config = write_config(
            openai_model(server),
            strategy="function_calling",
            limits={"max_iterations": 3},
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        environment, _ = local_run(config)
        # When the question is asked
        meta, execution = environment.ask("weather?")
        # Then the third (final) call offered no tools, and the run succeeded with a non-empty answer
        bodies = [request.body for request in server.requests]
    assert [bool(body.get("tools")) for body in bodies] == [True, True, False]
    assert (execution.status, meta.status, meta.stop_reason) == ("SUCCEEDED", "SUCCEEDED", "max_iterations")
    assert meta.answer and meta.answer.strip()
    assert meta.usage.tool_calls == 2


def test_the_state_payload_stays_the_same_small_size_from_iteration_1_to_30(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a model that calls a tool 29 times (with growing thoughts) before answering
        turns = [react_action("get_weather", {"city": "Paris"}, thought="x" * (100 * n)) for n in range(29)]
        config = write_config(
            scripted_model(*turns, react_answer("done")),
            limits={"max_iterations": 40},
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        environment, listener = local_run(config)
        # When the long run executes
        meta, _ = environment.ask("weather?")
    # Then the payload leaving IterationGuard is under 2 KB, and the same size at iteration 1 and 30 but for
    # the digits of its counters (the iteration and the tokens the run has spent)
    outputs = {
        event.output["iteration"]: event.output
        for event in listener.events
        if event.type == "exited" and event.state == "IterationGuard"
    }
    assert meta.iteration == 30
    assert len(json.dumps(outputs[30])) < 2048
    assert outputs[30]["run"]["spend"]["input_tokens"] > outputs[1]["run"]["spend"]["input_tokens"]
    assert size_less_counters(outputs[30]) == size_less_counters(outputs[1])


def test_a_tool_that_answers_500_becomes_an_observation_and_the_run_goes_on(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ScriptableToolServer(default=Status(500, "database is down")) as tools:
        # Given a tool API that answers 500
        config = write_config(
            scripted_model(react_action("lookup", {"q": "x"}), react_answer("The lookup service is down.")),
            apis=[http_api(tools.url, get_tool("lookup", "/lookup", q="string"))],
        )
        environment, _ = local_run(config)
        # When the model calls it
        meta, execution = environment.ask("look it up")
    # Then the observation says the tool failed with 500, and the run still succeeded
    observation = next(m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool")
    assert "500" in observation.content
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "The lookup service is down.")
    trace = next(step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == "tool")
    assert trace.ok is False


def test_a_tool_that_hangs_past_its_timeout_becomes_a_timed_out_observation(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ScriptableToolServer(default=Hang(5)) as tools:
        # Given a tool API that hangs for 5 s, configured with a 300 ms limit
        config = write_config(
            scripted_model(react_action("lookup", {"q": "x"}), react_answer("It timed out.")),
            apis=[http_api(tools.url, get_tool("lookup", "/lookup", q="string"), timeout_ms=300)],
        )
        environment, _ = local_run(config)
        # When the model calls it
        meta, _ = environment.ask("look it up")
    # Then the observation says it timed out and the run succeeded
    observation = next(m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool")
    assert "timed out" in observation.content
    assert (meta.status, meta.answer) == ("SUCCEEDED", "It timed out.")
