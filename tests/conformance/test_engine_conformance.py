"""The end-to-end scenarios on the local engine and on moto's Step Functions interpreter: same result.

Each test runs one config through both engines (same definition, handlers and store; see conftest)
and asserts, scenario by scenario, that the states entered (Map items included), the output of every
state, the execution's status, output, error and cause, and what the run stored (META and messages)
are equal, then checks on the local run that the scenario did what it is about, so that two engines
wrong in the same way still fail.

What the engines do differently, by design, and what is therefore not compared:
- Retry waits: the local engine runs with `retry_interval_scale=0` (no waiting); moto waits the
  definition's IntervalSeconds with its own backoff. Only the outcome of a retry is compared.
- History: moto's history has Task scheduled/started/succeeded events and no retry events; the local
  engine reports `retry` and `caught` events. Only states entered and exited are compared.
- Causes: a Lambda error's cause carries a stack trace and a request id that differ per call; the
  comparison keeps its `errorType` and `errorMessage`. (The local engine's cause has no `requestId`,
  which the Lambda Python runtime includes; moto's side here includes it, as Lambda does.)

Not compared, because moto's interpreter only runs them in real time: Task and execution
`TimeoutSeconds` (30 s to an hour in this definition), retries that need several waits (repeated
`StoreTransientError` or Lambda service errors: 1 s to 30 s each), and Map `MaxConcurrency`, which
neither history shows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepwise.local.example_api import ExampleToolApi
from tests.conformance.definition import map_item_states
from tests.conformance.engines import EnginePair, EngineRun
from tests.e2e.conftest import ConfigWriter, get_tool, http_api, react_action, react_answer, scripted_model
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Hang, Json, ScriptableToolServer, Status

StartEngines = Callable[[Path], EnginePair]


def openai_model(server: FakeOpenAIServer) -> dict[str, Any]:
    """A model config for the fake OpenAI-compatible server, with native tools."""
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }


def in_defined_order(states: list[str]) -> list[str]:
    """`states` with each stretch of Map item states sorted: parallel items interleave their states in an order
    neither engine defines (a slow machine showed InvokeTool of one item before NeedsApproval of the other)."""
    item_states = map_item_states()
    ordered: list[str] = []
    for in_map_item, group in itertools.groupby(states, key=item_states.__contains__):
        stretch = list(group)
        ordered.extend(sorted(stretch) if in_map_item else stretch)
    return ordered


def assert_same_run(local: EngineRun, moto: EngineRun) -> None:
    """Every observable part of the two runs is equal; the first difference is named."""
    assert in_defined_order(local.states_entered) == in_defined_order(moto.states_entered), "states entered differ"
    assert (local.status, local.output) == (moto.status, moto.output), "execution outcome differs"
    assert (local.error, local.cause) == (moto.error, moto.cause), "execution error differs"
    assert local.states_exited == moto.states_exited, "state outputs differ"
    assert local.stored == moto.stored, "stored run differs"


def test_an_answer_without_tools_runs_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    # Given a model that answers straight away
    engines = engine_pair(write_config(scripted_model(react_answer("Hello there."))))
    # When the question runs on both engines
    local, moto = engines.run_both("hi")
    # Then both ran guard, model, parse and format, and succeeded with the same answer
    assert_same_run(local, moto)
    assert local.states_entered == [
        "IterationGuard",
        "NeedsCompaction",
        "LLMCall",
        "Parse",
        "Route",
        "Format",
        "EvaluateOnline",
        "Done",
    ]
    assert (local.status, local.stored.answer) == ("SUCCEEDED", "Hello there.")


def test_one_tool_call_runs_the_same_on_both_engines(write_config: ConfigWriter, engine_pair: StartEngines) -> None:
    with ExampleToolApi() as api:
        # Given a model that asks for the weather in Paris, then answers
        config = write_config(
            scripted_model(react_action("get_weather", {"city": "Paris"}), react_answer("Mild.")),
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("weather in Paris?")
    # Then both went through the Map once and stored the same observation and answer
    assert_same_run(local, moto)
    assert local.states_entered.count("InvokeTool") == 1
    observations = [content for role, content, _ in local.stored.messages if role == "tool"]
    assert len(observations) == 1 and "Paris" in observations[0]


def test_two_parallel_tool_calls_run_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
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
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("weather in Paris and Tokyo?")
    # Then both ran two Map items and stored both observations in call order
    assert_same_run(local, moto)
    assert local.states_entered.count("InvokeTool") == 2
    observations = [content for role, content, _ in local.stored.messages if role == "tool"]
    assert ["Paris" in observations[0], "Tokyo" in observations[1]] == [True, True]


def test_a_tool_answering_500_runs_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    with ScriptableToolServer(default=Status(500, "database is down")) as tools:
        # Given a tool API that answers 500
        config = write_config(
            scripted_model(react_action("lookup", {"q": "x"}), react_answer("The lookup service is down.")),
            apis=[http_api(tools.url, get_tool("lookup", "/lookup", q="string"))],
        )
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("look it up")
    # Then on both the failure became an observation and the run still succeeded
    assert_same_run(local, moto)
    observation = next(content for role, content, _ in local.stored.messages if role == "tool")
    assert "500" in observation
    assert local.status == "SUCCEEDED"


def test_a_tool_timing_out_runs_the_same_on_both_engines(write_config: ConfigWriter, engine_pair: StartEngines) -> None:
    with ScriptableToolServer(default=Hang(5)) as tools:
        # Given a tool API that hangs for 5 s, configured with a 300 ms limit
        config = write_config(
            scripted_model(react_action("lookup", {"q": "x"}), react_answer("It timed out.")),
            apis=[http_api(tools.url, get_tool("lookup", "/lookup", q="string"), timeout_ms=300)],
        )
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("look it up")
    # Then on both the observation says it timed out and the run succeeded
    assert_same_run(local, moto)
    observation = next(content for role, content, _ in local.stored.messages if role == "tool")
    assert "timed out" in observation
    assert (local.status, local.stored.answer) == ("SUCCEEDED", "It timed out.")


def test_the_iteration_limit_runs_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
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
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("weather?")
    # Then both stopped at the limit with the same non-empty answer, through Route's limit_hit branch
    assert_same_run(local, moto)
    assert (local.status, local.stored.stop_reason, local.stored.iteration) == ("SUCCEEDED", "max_iterations", 3)
    assert local.stored.answer and local.stored.answer.strip()


def test_a_thirty_iteration_run_passes_the_same_small_payloads_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    with ExampleToolApi() as api:
        # Given a model that calls a tool 29 times (with growing thoughts) before answering
        turns = [react_action("get_weather", {"city": "Paris"}, thought="x" * (100 * n)) for n in range(29)]
        config = write_config(
            scripted_model(*turns, react_answer("done")),
            limits={"max_iterations": 40},
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("weather?")
    # Then both ran 30 iterations and every state passed on the same output, under 2 KB each
    assert_same_run(local, moto)
    assert local.stored.iteration == 30
    assert max(len(output) for _, output in local.states_exited) < 2048


def test_a_reply_the_parser_cannot_read_loops_back_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    # Given a model whose first reply follows no protocol, then answers
    engines = engine_pair(write_config(scripted_model({"content": "```json\n{not json"}, react_answer("Fixed."))))
    # When the question runs on both engines
    local, moto = engines.run_both("hi")
    # Then both routed the parse error back to IterationGuard and answered in the second iteration
    assert_same_run(local, moto)
    assert local.states_entered.count("IterationGuard") == 2
    assert (local.stored.answer, local.stored.iteration) == ("Fixed.", 2)


def test_a_transient_model_error_is_retried_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    """moto waits the definition's retry interval (up to 2 s with full jitter); the local engine does not."""
    with FakeOpenAIServer() as server:
        # Given a model endpoint that answers 429 once, then a completion, for each engine's run
        def rate_limit_once() -> None:
            server.enqueue(status=429, body={"error": {"message": "rate limited"}})
            server.enqueue(body=chat_completion(content="Recovered."))

        engines = engine_pair(write_config(openai_model(server), strategy="function_calling"))
        # When the question runs on both engines
        local, moto = engines.run_both("hi", before_each=rate_limit_once)
        # Then both retried LLMCall once (two model calls per run) and succeeded with the same answer
        assert len(server.requests) == 4
    assert_same_run(local, moto)
    assert (local.status, local.stored.answer, local.stored.llm_calls) == ("SUCCEEDED", "Recovered.", 1)


def test_a_permanent_model_error_fails_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model endpoint that rejects every request with 400
        server.default(status=400, body={"error": {"message": "model 'nope' does not exist"}})
        engines = engine_pair(write_config(openai_model(server), strategy="function_calling"))
        # When the question runs on both engines
        local, moto = engines.run_both("hi")
        # Then each engine called the model once (no retry)
        assert len(server.requests) == 2
    # And both caught the error into FormatFailure and failed with the same error, cause and stored error
    assert_same_run(local, moto)
    assert local.states_entered[-3:] == ["FormatFailure", "EvaluateOnlineAfterFailure", "Failed"]
    assert (local.status, local.error) == ("FAILED", "LLMPermanentError")
    assert local.stored.error is not None and "does not exist" in local.stored.error[1]


def test_a_run_summarized_by_compact_runs_the_same_on_both_engines(
    write_config: ConfigWriter, engine_pair: StartEngines
) -> None:
    with ScriptableToolServer(default=Json({"report": "aisle 7 holds 49 parcels. " * 80})) as tools:
        # Given a scripted model with a 2,048-token window, reading a 2 KB report five times before answering
        turns = [react_action("lookup", {"q": f"part {n}"}) for n in range(5)]
        model = scripted_model(*turns, react_answer("49 parcels.")) | {"context_window": 2048}
        config = write_config(
            model,
            apis=[http_api(tools.url, get_tool("lookup", "/lookup", q="string"))],
            limits={"max_iterations": 8, "max_observation_chars": 4000},
        )
        engines = engine_pair(config)
        # When the question runs on both engines
        local, moto = engines.run_both("how many parcels?")
    # Then both went through Compact, passed the same payloads and stored the same run
    assert_same_run(local, moto)
    assert "Compact" in local.states_entered
    assert (local.status, local.stored.answer) == ("SUCCEEDED", "49 parcels.")
    # (the summarizer's calls are model calls: more of them than the six replies)
    assert local.stored.llm_calls > 6
