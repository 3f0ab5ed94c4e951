"""Each reasoning strategy and protocol, end to end: the real state machine, handlers, store and tool API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi, example_tools_config
from stepwise.models.run import RunMeta
from stepwise.models.step_record import StepRecord
from tests.e2e.conftest import ConfigWriter, react_action, react_answer, scripted_model
from tests.support.openai_server import FakeOpenAIServer, RecordedRequest, chat_completion

PARIS = {"city": "Paris"}
ANSWER = "It is 14 degrees with light rain in Paris."
FINAL_ROUND_ORDER = "You cannot use tools any more"


def text_turn(content: str, latency_ms: int = 0) -> dict[str, Any]:
    return {"content": content, "latency_ms": latency_ms}


def native_call(*cities: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "get_weather", "arguments": {"city": city}} for city in cities]}


def openai_model(server: FakeOpenAIServer, **capabilities: bool) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True} | capabilities,
    }


def weather_call(*cities: str) -> dict[str, Any]:
    """A chat.completion asking for the weather of each city, in parallel."""
    return chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": city}} for city in cities])


def steps_of(environment: LocalEnvironment, meta: RunMeta, kind: str) -> list[StepRecord]:
    return [step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == kind]


def tool_observations(environment: LocalEnvironment, meta: RunMeta) -> list[str]:
    return [m.content for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]


def last_user_text(request: RecordedRequest) -> str:
    return str(next(m["content"] for m in reversed(request.body["messages"]) if m["role"] == "user"))


STRATEGIES = {
    "function_calling": (
        {"strategy": "function_calling"},
        True,
        [native_call("Paris"), text_turn(ANSWER)],
        "function_calling",
    ),
    "react_json": (
        {"strategy": "react", "protocol": "react_json"},
        False,
        [react_action("get_weather", PARIS), react_answer(ANSWER)],
        "react_json",
    ),
    "react_text": (
        {"strategy": "react", "protocol": "react_text"},
        False,
        [
            text_turn('Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'),
            text_turn(f"Thought: I know it now.\nFinal Answer: {ANSWER}"),
        ],
        "react_text",
    ),
    "xml": (
        {"strategy": "react", "protocol": "xml"},
        False,
        [
            text_turn('<thought>I need the weather.</thought>\n<action>get_weather(city="Paris")</action>'),
            text_turn(f"<thought>I know it now.</thought>\n<final_answer>{ANSWER}</final_answer>"),
        ],
        "xml",
    ),
    "markers": (
        {"strategy": "react", "protocol": "markers"},
        False,
        [
            text_turn(
                "/*PLANNING*/ I need the weather. /*END_PLANNING*/\n"
                '/*ACTION*/ {"tool": "get_weather", "parameters": {"city": "Paris"}} /*END_ACTION*/'
            ),
            text_turn(f"/*PLANNING*/ I know it now. /*END_PLANNING*/\n/*FINAL_ANSWER*/ {ANSWER} /*END_FINAL_ANSWER*/"),
        ],
        "markers",
    ),
    "auto_with_native_tools": (
        {"strategy": "auto"},
        True,
        [native_call("Paris"), text_turn(ANSWER)],
        "function_calling",
    ),
    "auto_text_only": (
        {"strategy": "auto"},
        False,
        [react_action("get_weather", PARIS), react_answer(ANSWER)],
        "react_json",
    ),
}


@pytest.mark.parametrize("case", list(STRATEGIES))
def test_each_strategy_calls_the_tool_api_once_then_answers(
    write_config: ConfigWriter, local_run: Callable[..., Any], case: str
) -> None:
    profile, native_tools, turns, protocol = STRATEGIES[case]
    with ExampleToolApi() as api:
        # Given a model that writes one weather call, then the answer, in the strategy's format
        config = write_config(
            scripted_model(*turns, native_tools=native_tools), apis=[example_tools_config(api.url)], **profile
        )
        environment, _ = local_run(config)
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
    # Then the run answered after one call to the API, whose observation is stored
    assert (execution.status, meta.status, meta.stop_reason, meta.answer) == (
        "SUCCEEDED",
        "SUCCEEDED",
        "final_answer",
        ANSWER,
    )
    observations = tool_observations(environment, meta)
    assert len(observations) == 1
    assert "light rain" in observations[0] and "Paris" in observations[0]
    # And the trace names the protocol used and the call the parser read
    assert all(f"protocol {protocol}," in (step.note or "") for step in steps_of(environment, meta, "llm"))
    first_decision = steps_of(environment, meta, "parse")[0]
    assert [(call["name"], call["arguments"]) for call in first_decision.calls or []] == [("get_weather", PARIS)]


def test_a_reply_that_cannot_be_parsed_once_gets_a_corrective_observation_and_the_run_recovers(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a model whose first reply has no action block, then follows the protocol
        turns = [text_turn("Let me think about the weather."), react_action("get_weather", PARIS), react_answer(ANSWER)]
        environment, _ = local_run(write_config(scripted_model(*turns), apis=[example_tools_config(api.url)]))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
    # Then the model was told what was wrong and which format to use, and the run still answered
    messages = environment.runtime.store.list_messages(meta.run_id)
    corrective = [m for m in messages if m.iteration == 1 and m.role == "user"]
    assert len(corrective) == 1
    assert "no JSON action block" in corrective[0].content
    assert '"action_input"' in corrective[0].content
    assert [step.decision for step in steps_of(environment, meta, "parse")] == [
        "parse_error",
        "tool_calls",
        "final_answer",
    ]
    assert (meta.status, meta.stop_reason, meta.answer) == ("SUCCEEDED", "final_answer", ANSWER)


def test_a_model_that_never_follows_the_format_ends_with_parse_errors_and_its_last_text(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model that never writes an action block, and at most 3 consecutive parse errors
    turns = [text_turn("Hmm, weather."), text_turn("Still thinking."), text_turn("Probably rainy in Paris.")]
    config = write_config(scripted_model(*turns), limits={"max_parse_errors": 3})
    environment, _ = local_run(config)
    # When a question is asked
    meta, execution = environment.ask("What is the weather in Paris?")
    # Then the run stopped after the third error with the model's last text as its answer
    assert (execution.status, meta.status, meta.stop_reason) == ("SUCCEEDED", "SUCCEEDED", "parse_errors")
    assert (meta.answer, meta.iteration) == ("Probably rainy in Paris.", 3)


@pytest.mark.parametrize(
    ("strategy", "protocol"), [("function_calling", None), ("react", "react_json"), ("react", "xml")]
)
def test_the_final_round_offers_no_tools_and_orders_an_answer_now(
    write_config: ConfigWriter, local_run: Callable[..., Any], strategy: str, protocol: str | None
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a model that asks for a tool twice, then answers, and a limit of 3 iterations
        if strategy == "function_calling":
            server.enqueue(body=weather_call("Paris"))
            server.enqueue(body=weather_call("Paris"))
            server.enqueue(body=chat_completion(content=ANSWER))
        else:
            action = react_action("get_weather", PARIS)["content"]
            if protocol == "xml":
                action = '<action>get_weather(city="Paris")</action>'
            server.enqueue(body=chat_completion(content=action))
            server.enqueue(body=chat_completion(content=action))
            final = f"<final_answer>{ANSWER}</final_answer>" if protocol == "xml" else react_answer(ANSWER)["content"]
            server.enqueue(body=chat_completion(content=final))
        config = write_config(
            openai_model(server),
            strategy=strategy,
            protocol=protocol,
            tool_choice="auto",
            limits={"max_iterations": 3},
            apis=[example_tools_config(api.url)],
        )
        environment, _ = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        requests = server.requests
    # Then the third and last call offered no tools, no tool_choice, and told the model to answer now
    assert len(requests) == 3
    final_call = requests[-1].body
    assert ("tools" in final_call, "tool_choice" in final_call) == (False, False)
    assert FINAL_ROUND_ORDER in last_user_text(requests[-1])
    assert "get_weather" not in final_call["messages"][0]["content"]
    assert all(FINAL_ROUND_ORDER not in last_user_text(request) for request in requests[:-1])
    # And the run ended on the limit with the answer written in that round
    assert (meta.status, meta.stop_reason, meta.answer) == ("SUCCEEDED", "max_iterations", ANSWER)
    assert [step.final_round for step in steps_of(environment, meta, "llm")] == [False, False, True]


def test_a_model_still_asking_for_tools_in_the_final_round_ends_with_a_summary_of_its_observations(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a native-tools model that always asks for a tool with a remark, and a limit of 2 iterations
        turn = native_call("Paris") | {"content": "Checking Paris once more."}
        config = write_config(
            scripted_model(turn, native_tools=True),
            strategy="function_calling",
            limits={"max_iterations": 2},
            apis=[example_tools_config(api.url)],
        )
        environment, listener = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
    # Then the tool ran once only, and the answer says the limit was reached with what the tool returned,
    # never the remark written beside a tool call
    assert listener.entered().count("InvokeTool") == 1
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "max_iterations")
    assert meta.answer is not None and meta.answer.startswith("The run stopped (max_iterations)")
    assert "- get_weather: " in meta.answer and "light rain" in meta.answer


def test_a_run_past_its_deadline_gets_a_final_round_and_stops_with_deadline(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a 2-second run budget (room for a loaded machine to start the run before it is spent) and a
        # model whose first (tool) turn takes longer than that
        slow_call = react_action("get_weather", PARIS) | {"latency_ms": 2200}
        config = write_config(
            scripted_model(slow_call, react_answer(ANSWER)),
            limits={"max_execution_seconds": 2, "max_iterations": 8},
            apis=[example_tools_config(api.url)],
        )
        environment, _ = local_run(config)
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
    # Then the second iteration was the final round and the run stopped for the deadline, with an answer
    assert [step.final_round for step in steps_of(environment, meta, "llm")] == [False, True]
    assert (execution.status, meta.status, meta.stop_reason, meta.answer) == (
        "SUCCEEDED",
        "SUCCEEDED",
        "deadline",
        ANSWER,
    )


NAMED_CHOICE = {"type": "function", "function": {"name": "get_weather"}}


@pytest.mark.parametrize(
    ("tool_choice", "first_wire_choice", "later_wire_choice"),
    [
        ("auto", "auto", "auto"),
        ("none", "none", "none"),
        ("required", "required", "auto"),
        ("get_weather", NAMED_CHOICE, "auto"),
    ],
)
def test_tool_choice_and_parallel_tool_calls_reach_the_model_and_forcing_stops_after_a_tool_ran(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    tool_choice: str,
    first_wire_choice: Any,
    later_wire_choice: Any,
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a function-calling profile with a tool_choice and parallel_tool_calls off
        server.enqueue(body=weather_call("Paris"))
        server.enqueue(body=chat_completion(content=ANSWER))
        config = write_config(
            openai_model(server),
            strategy="function_calling",
            tool_choice=tool_choice,
            parallel_tool_calls=False,
            apis=[example_tools_config(api.url)],
        )
        environment, _ = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        bodies = [request.body for request in server.requests]
    # Then each call carried the choice (a forcing one only until a tool ran) and parallel_tool_calls=false
    assert [body["tool_choice"] for body in bodies] == [first_wire_choice, later_wire_choice]
    assert [body["parallel_tool_calls"] for body in bodies] == [False, False]
    assert meta.answer == ANSWER


def test_calls_beyond_max_parallel_calls_are_dropped_noted_and_answered_as_not_run(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a model that asks for three cities at once, and at most two calls per iteration
        server.enqueue(body=weather_call("Paris", "Tokyo", "London"))
        server.enqueue(body=chat_completion(content=ANSWER))
        config = write_config(
            openai_model(server),
            strategy="function_calling",
            limits={"max_parallel_calls": 2},
            apis=[example_tools_config(api.url)],
        )
        environment, listener = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("Weather in Paris, Tokyo and London?")
        second_call = server.requests[1].body
    # Then two calls ran, the trace says one was dropped, and the model was told it did not run
    assert listener.entered().count("InvokeTool") == 2
    note = steps_of(environment, meta, "parse")[0].note or ""
    assert "1 tool calls beyond max_parallel_calls=2 were dropped" in note
    results = [m for m in second_call["messages"] if m["role"] == "tool"]
    assert [("light rain" in m["content"], "Not run" in m["content"]) for m in results] == [
        (True, False),
        (False, False),
        (False, True),
    ]
    assert meta.answer == ANSWER
