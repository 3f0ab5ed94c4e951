"""Structured answers end to end: a profile's response_schema turns the answer into validated JSON `output`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stepwise.models.run import RunMeta
from stepwise.models.step_record import StepRecord
from tests.e2e.conftest import ConfigWriter, scripted_model
from tests.support.openai_server import FakeOpenAIServer, RecordedRequest, chat_completion

ANSWER = "It is 14 degrees with light rain in Paris."
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temperature_c": {"type": "number"},
        "condition": {"type": "string"},
    },
    "required": ["city", "temperature_c", "condition"],
    "additionalProperties": False,
}
WEATHER = {"city": "Paris", "temperature_c": 14, "condition": "light rain"}
NO_TEMPERATURE = {"city": "Paris", "condition": "light rain"}


def openai_model(server: FakeOpenAIServer, **capabilities: bool) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": capabilities,
    }


def json_reply(value: Any) -> dict[str, Any]:
    return chat_completion(content=json.dumps(value))


def last_user_text(request: RecordedRequest) -> str:
    return str(next(m["content"] for m in reversed(request.body["messages"]) if m["role"] == "user"))


def format_steps(environment: Any, meta: RunMeta) -> list[StepRecord]:
    return [step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == "format"]


def structured_profile(model: dict[str, Any], **profile: Any) -> dict[str, Any]:
    """write_config options for a function-calling profile with the weather schema."""
    return {"model": model, "strategy": "function_calling", "response_schema": WEATHER_SCHEMA} | profile


def test_a_json_mode_model_answers_through_response_format_and_the_output_is_stored(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a JSON-mode model that answers in text, then gives the JSON
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(body=json_reply(WEATHER))
        options = structured_profile(openai_model(server, native_tools=True, json_mode=True))
        environment, _ = local_run(write_config(**options))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        requests = server.requests
    # Then the formatting call asked for the schema through response_format, without tools
    assert len(requests) == 2
    assert requests[1].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": WEATHER_SCHEMA, "strict": False},
    }
    assert "tools" not in requests[1].body
    # And the run keeps the text answer beside the validated output, with both calls' usage
    assert (meta.status, meta.answer, meta.output, meta.output_error) == ("SUCCEEDED", ANSWER, WEATHER, None)
    assert (meta.usage.llm_calls, meta.usage.input_tokens, meta.usage.output_tokens) == (2, 24, 14)


def test_a_text_only_model_is_asked_for_json_only_with_the_schema_in_the_prompt(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model without JSON mode or native tools, on the ReAct JSON protocol
        final = '```json\n{"action": "Final Answer", "action_input": "' + ANSWER + '"}\n```'
        server.enqueue(body=chat_completion(content=final))
        server.enqueue(body=chat_completion(content="Here it is:\n```json\n" + json.dumps(WEATHER) + "\n```"))
        options = structured_profile(openai_model(server), strategy="react", protocol="react_json")
        environment, _ = local_run(write_config(**options))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        formatting = server.requests[1]
    # Then one extra call carried the schema and asked for JSON only, and its fenced reply was read
    assert "response_format" not in formatting.body
    assert json.dumps(WEATHER_SCHEMA, sort_keys=True) in last_user_text(formatting)
    assert "Reply with the JSON only" in last_user_text(formatting)
    assert (meta.answer, meta.output) == (ANSWER, WEATHER)


def test_a_native_tools_model_without_json_mode_is_forced_to_call_the_answer_tool(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a native-tools model without JSON mode, which answers, then calls the forced tool
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(body=chat_completion(tool_calls=[{"name": "structured_answer", "arguments": WEATHER}]))
        environment, _ = local_run(write_config(**structured_profile(openai_model(server, native_tools=True))))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        formatting = server.requests[1].body
    # Then the formatting call offered only that tool, with the schema as its parameters, and forced it
    assert [tool["function"]["name"] for tool in formatting["tools"]] == ["structured_answer"]
    assert formatting["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA
    assert formatting["tool_choice"] == {"type": "function", "function": {"name": "structured_answer"}}
    assert (meta.answer, meta.output) == (ANSWER, WEATHER)


def test_an_invalid_reply_is_retried_once_with_the_validation_error(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a JSON-mode model whose first JSON lacks a required field, and whose second is valid
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(body=json_reply(NO_TEMPERATURE))
        server.enqueue(body=json_reply(WEATHER))
        environment, _ = local_run(write_config(**structured_profile(openai_model(server, json_mode=True))))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        retry = server.requests[2]
    # Then the retry told the model what was wrong, and the valid second reply is the output
    assert "'temperature_c' is a required property" in last_user_text(retry)
    assert (meta.output, meta.output_error) == (WEATHER, None)
    assert [step.ok for step in format_steps(environment, meta)] == [False, True]
    assert meta.usage.llm_calls == 3


def test_a_reply_still_invalid_after_the_retry_is_reported_and_never_stored_as_output(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a JSON-mode model that twice gives JSON without a required field
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(body=json_reply(NO_TEMPERATURE))
        server.enqueue(body=json_reply(NO_TEMPERATURE))
        environment, _ = local_run(write_config(**structured_profile(openai_model(server, json_mode=True))))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        assert len(server.requests) == 3
    # Then the run succeeded with its text answer, no output, and the validation error
    assert (meta.status, meta.answer, meta.output) == ("SUCCEEDED", ANSWER, None)
    assert meta.output_error is not None
    assert "'temperature_c' is a required property" in meta.output_error


def test_a_retried_format_reuses_the_stored_reply_instead_of_calling_the_model_again(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a JSON-mode model whose first JSON is invalid and whose second call fails with 503 once
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(body=json_reply(NO_TEMPERATURE))
        server.enqueue(status=503, body={"error": {"message": "overloaded"}})
        server.enqueue(body=json_reply(WEATHER))
        environment, listener = local_run(write_config(**structured_profile(openai_model(server, json_mode=True))))
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        requests = server.requests
    # Then the state machine retried Format, which re-sent only the second attempt (the first was stored)
    assert [event.state for event in listener.events if event.type == "retry"] == ["Format"]
    assert len(requests) == 4
    assert requests[3].body == requests[2].body
    assert "'temperature_c' is a required property" in last_user_text(requests[3])
    # And the output is valid, with each successful call counted once
    assert (meta.output, meta.usage.llm_calls) == (WEATHER, 3)


def test_a_formatting_call_the_provider_rejects_leaves_the_answer_and_reports_the_error(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a JSON-mode model whose provider rejects the formatting call with 400
        server.enqueue(body=chat_completion(content=ANSWER))
        server.enqueue(status=400, body={"error": {"message": "response_format is not supported"}})
        environment, _ = local_run(write_config(**structured_profile(openai_model(server, json_mode=True))))
        # When a question is asked
        meta, execution = environment.ask("What is the weather in Paris?")
    # Then the run still succeeded with its answer, and output_error says the call failed
    assert (execution.status, meta.status, meta.answer, meta.output) == ("SUCCEEDED", "SUCCEEDED", ANSWER, None)
    assert meta.output_error is not None
    assert "response_format is not supported" in meta.output_error


def test_a_run_stopped_by_a_limit_still_gets_a_structured_output_of_its_best_answer(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a scripted text-only model that ignores the protocol once (the limit is one parse error),
    # then gives the JSON when asked
    turns = [{"content": "Rainy and 14 degrees in Paris."}, {"content": json.dumps(WEATHER)}]
    config = write_config(scripted_model(*turns), response_schema=WEATHER_SCHEMA, limits={"max_parse_errors": 1})
    environment, _ = local_run(config)
    # When a question is asked
    meta, _ = environment.ask("What is the weather in Paris?")
    # Then the run stopped for parse errors with the model's text as answer and the JSON as output
    assert (meta.stop_reason, meta.answer, meta.output) == ("parse_errors", "Rainy and 14 degrees in Paris.", WEATHER)
    assert [step.note for step in format_steps(environment, meta)] == ["structured output attempt 1 (prompt)"]
