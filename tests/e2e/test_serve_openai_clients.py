"""OpenAI clients as users configure them (nothing but `base_url` and `api_key`) against `stepwise serve`.

The official `openai` SDK and LangChain's `ChatOpenAI` talk to the facade; the profiles' model is a
loopback OpenAI-compatible server that records what the agent sends it, so each test checks both ends:
what the client gets back, and what reached the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import openai
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai import OpenAI
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionUserMessageParam,
)
from pydantic import BaseModel

from stepwise.local.server import LocalApi
from tests.e2e.conftest import native_assistant_config, serve
from tests.support.openai_server import FakeOpenAIServer, RecordedRequest, chat_completion

WEATHER_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


RESEARCHER = {"model": "gpt", "strategy": "function_calling", "system_prompt": "You research."}


class CityWeather(BaseModel):
    """The weather in one city."""

    city: str
    celsius: int


@pytest.fixture(scope="module")
def api(model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    config = native_assistant_config(
        model_server.base_url,
        timeout_seconds=30,
        more_profiles={
            "researcher": {"model": "gpt", "strategy": "function_calling", "system_prompt": "You research."}
        },
    )
    with serve(config, Path(tmp_path_factory.mktemp("clients"))) as served:
        yield served


@pytest.fixture
def client(api: LocalApi) -> OpenAI:
    # As users configure it: the key goes out as `Authorization: Bearer`.
    return OpenAI(base_url=f"{api.url}/v1", api_key="sk-caller", max_retries=0)


@pytest.fixture
def chat_model(api: LocalApi) -> ChatOpenAI:
    return ChatOpenAI(base_url=f"{api.url}/v1", api_key="sk-caller", model="assistant", max_retries=0)


def requests_after(server: FakeOpenAIServer, count: int) -> list[RecordedRequest]:
    """The requests the model received after the first `count`."""
    return server.requests[count:]


def test_the_sampling_fields_of_a_request_reach_the_model(client: OpenAI, model_server: FakeOpenAIServer) -> None:
    # Given a model that answers at once
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="Hi."))
    # When the SDK sends every sampling field OpenAI accepts
    completion = client.chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": "Say hi."}],
        temperature=0.3,
        top_p=0.9,
        frequency_penalty=0.1,
        presence_penalty=0.2,
        logit_bias={"50256": -100},
        seed=7,
        stop=["END"],
        max_completion_tokens=50,
        reasoning_effort="low",
        user="user-1",
        metadata={"team": "docs"},
        store=False,
        logprobs=False,
    )
    # Then the answer comes back, and the model got the sampling fields but not the caller's bookkeeping
    assert completion.choices[0].message.content == "Hi."
    (sent,) = requests_after(model_server, seen)
    expected = {
        "temperature": 0.3,
        "top_p": 0.9,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.2,
        "logit_bias": {"50256": -100},
        "seed": 7,
        "stop": ["END"],
        "max_tokens": 50,
        "reasoning_effort": "low",
    }
    assert {key: sent.body.get(key) for key in expected} == expected
    assert not {"user", "metadata", "store", "logprobs"} & set(sent.body)


def test_the_models_are_the_profiles_and_model_selects_one(client: OpenAI, model_server: FakeOpenAIServer) -> None:
    # When the SDK lists the models
    listed = client.models.list()
    # Then they are the profiles
    assert sorted(model.id for model in listed.data) == ["assistant", "researcher"]
    # And naming one runs the question with that profile
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="Found it."))
    client.chat.completions.create(model="researcher", messages=[{"role": "user", "content": "Look it up."}])
    (sent,) = requests_after(model_server, seen)
    assert sent.body["messages"][0] == {"role": "system", "content": "You research."}


def test_the_sdk_retrieves_one_profile_as_a_model_and_an_unknown_one_is_not_found(client: OpenAI) -> None:
    # When the SDK retrieves a profile by name
    model = client.models.retrieve("researcher")
    # Then it is that profile, as an OpenAI model
    assert (model.id, model.object, model.owned_by) == ("researcher", "model", "stepwise")
    # And a name that is no profile is the SDK's NotFoundError, saying where the names are
    with pytest.raises(openai.NotFoundError, match="GET /v1/models"):
        client.models.retrieve("gpt-4o")


def test_a_request_without_a_key_is_refused(api: LocalApi) -> None:
    # When a request carries neither x-api-key nor a bearer token
    response = httpx.get(f"{api.url}/v1/models")
    # Then it is 401
    assert response.status_code == 401


def test_a_call_of_a_client_tool_is_handed_back_and_its_result_continues_the_run(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that calls the client's tool, then answers from its result
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}]))
    model_server.enqueue(body=chat_completion(content="It is 18 °C in Paris."))
    question: ChatCompletionUserMessageParam = {"role": "user", "content": "Weather in Paris?"}
    # When the SDK offers its tool
    first = client.chat.completions.create(model="assistant", messages=[question], tools=[WEATHER_TOOL])
    # Then the response asks the client to call it
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    # And the model was offered the client's tool beside the profile's
    offered = [item["function"]["name"] for item in requests_after(model_server, seen)[0].body["tools"]]
    assert offered == ["current_time", "get_weather"]
    # When the client sends the tool's result
    conversation: list[ChatCompletionMessageParam] = [
        question,
        cast(ChatCompletionMessageParam, choice.message.model_dump(exclude_none=True)),
        {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 18}'},
    ]
    second = client.chat.completions.create(model="assistant", messages=conversation, tools=[WEATHER_TOOL])
    # Then the model answers from it: the result reached the model under the call's id
    assert second.choices[0].message.content == "It is 18 °C in Paris."
    replayed = requests_after(model_server, seen)[1].body["messages"]
    assert replayed[-1] == {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 18}'}


def test_a_model_rate_limited_on_every_attempt_is_its_429_passed_through_with_its_wait(
    client: OpenAI, api: LocalApi, model_server: FakeOpenAIServer
) -> None:
    # Given a model that answers 429 with a Retry-After to each of the run's attempts (the state machine's 5)
    seen = len(model_server.requests)
    limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    for _ in range(5):
        model_server.enqueue(status=429, body=limited, headers={"Retry-After": "7"})
    # When the SDK asks for a completion
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="assistant", messages=[{"role": "user", "content": "Busy?"}])
    # Then the provider's 429 reaches the SDK with its wait and the provider's error, not a placeholder answer
    assert len(requests_after(model_server, seen)) == 5
    assert (refused.value.status_code, refused.value.response.headers["retry-after"]) == (429, "7")
    assert "HTTP 429 rate_limit_exceeded: Rate limit reached" in refused.value.message
    # And the run it names ended FAILED without an answer, its stop reason saying why
    run_id = refused.value.response.json()["error"]["details"]["run_id"]
    run = httpx.get(f"{api.url}/v1/runs/{run_id}", headers={"x-api-key": "sk-caller"}, timeout=30).json()
    assert (run["status"], run["outcome"], run["stop_reason"], run["answer"]) == ("FAILED", "none", "model_error", None)


def test_response_format_json_schema_gives_the_parsed_answer(client: OpenAI, model_server: FakeOpenAIServer) -> None:
    # Given a model that answers, then formats its answer as JSON
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="Paris: 18 degrees."))
    model_server.enqueue(body=chat_completion(content='{"city": "Paris", "celsius": 18}'))
    # When the SDK asks for a structured answer
    parsed = client.chat.completions.parse(
        model="assistant", messages=[{"role": "user", "content": "Weather in Paris?"}], response_format=CityWeather
    )
    # Then it gets the JSON as the answer, and the model was asked for it with the schema
    assert parsed.choices[0].message.parsed == CityWeather(city="Paris", celsius=18)
    formatting = requests_after(model_server, seen)[1].body
    assert formatting["response_format"]["json_schema"]["schema"]["required"] == ["city", "celsius"]


def test_response_format_json_object_gives_a_json_answer(client: OpenAI, model_server: FakeOpenAIServer) -> None:
    # Given a model that answers, then formats its answer as JSON
    model_server.enqueue(body=chat_completion(content="Paris is sunny."))
    model_server.enqueue(body=chat_completion(content='{"sky": "sunny"}'))
    # When the SDK asks for a JSON object
    completion = client.chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": "Sky over Paris, as JSON?"}],
        response_format={"type": "json_object"},
    )
    # Then the answer is that object
    assert json.loads(completion.choices[0].message.content or "") == {"sky": "sunny"}


def test_an_invalid_response_format_is_refused_naming_the_field(client: OpenAI) -> None:
    # When the SDK sends a response_format of an unknown type
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(
            model="assistant",
            messages=[{"role": "user", "content": "hi"}],
            response_format=cast(Any, {"type": "yaml"}),
        )
    # Then the 422 names it
    assert "response_format" in str(refused.value)


def test_langchain_with_sampling_fields_gets_the_answer(api: LocalApi, model_server: FakeOpenAIServer) -> None:
    # Given a ChatOpenAI with a penalty and a temperature, as users set them
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="Bonjour."))
    llm = ChatOpenAI(
        base_url=f"{api.url}/v1", api_key="sk-caller", model="assistant", frequency_penalty=0.1, temperature=0
    )
    # When it is invoked
    answer = llm.invoke("Say hello in French.")
    # Then the answer is the agent's, and the penalty reached the model
    assert answer.content == "Bonjour."
    assert requests_after(model_server, seen)[0].body["frequency_penalty"] == 0.1


def test_langchain_bind_tools_round_trip(chat_model: ChatOpenAI, model_server: FakeOpenAIServer) -> None:
    # Given a LangChain tool and a model that calls it, then answers
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"18 degrees in {city}"

    model_server.enqueue(body=chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Lyon"}}]))
    model_server.enqueue(body=chat_completion(content="18 degrees in Lyon."))
    bound = chat_model.bind_tools([get_weather])
    history: list[Any] = [HumanMessage("Weather in Lyon?")]
    # When the bound model is invoked
    reply = bound.invoke(history)
    # Then it asks for the tool
    (call,) = reply.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Lyon"})
    # When the tool's result is sent back
    history += [reply, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    final = bound.invoke(history)
    # Then the answer follows from it
    assert final.content == "18 degrees in Lyon."


def test_langchain_with_structured_output_gives_the_object(
    chat_model: ChatOpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that answers, then formats its answer as JSON
    model_server.enqueue(body=chat_completion(content="Lyon: 21 degrees."))
    model_server.enqueue(body=chat_completion(content='{"city": "Lyon", "celsius": 21}'))
    # When LangChain asks for the answer as a pydantic object
    weather = chat_model.with_structured_output(CityWeather).invoke("Weather in Lyon?")
    # Then it gets it
    assert weather == CityWeather(city="Lyon", celsius=21)


def test_langchain_with_structured_output_by_function_calling(
    chat_model: ChatOpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that calls the schema's tool, as forced by the client
    model_server.enqueue(
        body=chat_completion(tool_calls=[{"name": "CityWeather", "arguments": {"city": "Nice", "celsius": 24}}])
    )
    # When LangChain asks for the object through a forced tool call
    structured = chat_model.with_structured_output(CityWeather, method="function_calling")
    weather = structured.invoke("Weather in Nice?")
    # Then it gets the object from the tool call handed back
    assert weather == CityWeather(city="Nice", celsius=24)


def test_fields_openai_takes_and_a_run_cannot_use_are_accepted_and_named_in_a_header(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that answers at once
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="Hi."))
    # When a newer client sends OpenAI's service tier, web search and modalities
    raw = client.chat.completions.with_raw_response.create(
        model="assistant",
        messages=[{"role": "user", "content": "Say hi."}],
        service_tier="flex",
        web_search_options={"search_context_size": "low"},
        modalities=["text"],
    )
    # Then the answer comes back, a header names what was ignored, and none of it reached the model
    assert raw.parse().choices[0].message.content == "Hi."
    assert raw.headers["stepwise-ignored-fields"] == "service_tier, modalities, web_search_options"
    (sent,) = requests_after(model_server, seen)
    assert not {"service_tier", "web_search_options", "modalities"} & set(sent.body)


def test_a_legacy_function_call_is_handed_back_and_its_result_continues_the_run(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that calls the client's function, then answers from its result
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}}]))
    model_server.enqueue(body=chat_completion(content="It is 4 °C in Oslo."))
    question: ChatCompletionUserMessageParam = {"role": "user", "content": "Weather in Oslo?"}
    function = cast(Any, WEATHER_TOOL["function"])
    # When an old client offers it as `functions`
    first = client.chat.completions.create(
        model="assistant", messages=[question], functions=[function], function_call="auto"
    )
    # Then the answer is one function_call, as OpenAI answered such a request
    choice = first.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.function_call is not None
    assert (choice.message.function_call.name, json.loads(choice.message.function_call.arguments)) == (
        "get_weather",
        {"city": "Oslo"},
    )
    # And the model was offered it as a tool, one call at a time
    offered = requests_after(model_server, seen)[0].body
    assert [item["function"]["name"] for item in offered["tools"]] == ["current_time", "get_weather"]
    assert offered["parallel_tool_calls"] is False
    # When the client sends the function's result as a `function` message
    conversation: list[ChatCompletionMessageParam] = [
        question,
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "get_weather", "arguments": choice.message.function_call.arguments},
        },
        {"role": "function", "name": "get_weather", "content": '{"celsius": 4}'},
    ]
    second = client.chat.completions.create(model="assistant", messages=conversation, functions=[function])
    # Then the model answers from it, the result reaching it as the tool call's result
    assert second.choices[0].message.content == "It is 4 °C in Oslo."
    replayed = requests_after(model_server, seen)[1].body["messages"]
    assert (replayed[-1]["role"], replayed[-1]["content"]) == ("tool", '{"celsius": 4}')
    assert replayed[-1]["tool_call_id"] == replayed[-2]["tool_calls"][0]["id"]


def test_the_sdks_answer_message_appended_to_the_conversation_continues_it(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that calls the client's tool, then answers from its result
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}}]))
    model_server.enqueue(body=chat_completion(content="It is 3 °C in Oslo."))
    question: ChatCompletionUserMessageParam = {"role": "user", "content": "Weather in Oslo?"}
    first = client.chat.completions.create(model="assistant", messages=[question], tools=[WEATHER_TOOL])
    (call,) = first.choices[0].message.tool_calls or []
    # When the client appends the SDK's message object itself, as OpenAI's tool-calling guide does
    conversation: list[Any] = [question, first.choices[0].message]
    conversation.append({"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 3}'})
    second = client.chat.completions.create(model="assistant", messages=conversation, tools=[WEATHER_TOOL])
    # Then the run continues from the result: the model answers, having been sent the call and its result
    assert second.choices[0].message.content == "It is 3 °C in Oslo."
    replayed = requests_after(model_server, seen)[1].body["messages"]
    assert replayed[-1] == {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 3}'}
